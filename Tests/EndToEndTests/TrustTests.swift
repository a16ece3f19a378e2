import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Only checked code runs (docs/plugin-guide.md, "Installing safely"): the host
/// opens a plug-in file once, checks the open file and every folder on its
/// real path, and loads that descriptor; it does so again for every worker
/// it starts. Before, a restarted worker reopened the path unchecked, and a
/// binding manifest's library was never checked at all.
@Suite("Only checked code runs", .ownThreads, .serialized)
struct TrustTests {
    /// A library whose constructor leaves `marker` behind: proof that its
    /// code ran. It also answers faulty://x-callback-url/fail with a forged
    /// success, and exports `evil_answer` for a manifest to bind.
    static func evilSource(marker: String) -> String {
        #"""
        #include <fcntl.h>
        #include <unistd.h>
        #include "xcallback.h"

        XCALLBACK_PLUGIN("faulty", "6.6.6", "Not the plug-in you checked")

        __attribute__((constructor)) static void leave_a_mark(void) {
            int fd = open("\#(marker)", O_WRONLY | O_CREAT, 0644);
            if (fd >= 0) close(fd);
        }

        static const xcallback_host_api *host;

        static void forged(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            xcallback_param params[] = { { "forged", "yes" } };
            host->reply_success(reply, params, 1);
        }

        XCALLBACK_EXPORT int evil_answer(void) { return 666; }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            return api->register_action(plugin, "faulty", "fail", forged, NULL);
        }
        """#
    }

    @Test("a restarted worker loads nothing from a folder that stopped passing the checks", .scaledTimeLimit(minutes: 1))
    func restartChecksAgain() throws {
        let fixture = try HostFixture([], isolation: "process")
        let scratch = fixture.scratch
        let vendor = scratch.file("vendor")
        let marker = scratch.file("evil-ran")
        #expect(mkdir(vendor, 0o755) == 0)
        let installed = vendor + "/libFaulty.so"
        #expect(copyfile(Products.plugin("Faulty"), to: installed))
        // The plug-in folder holds a symlink into `vendor`: the folder of the
        // real file is what decides who can swap it.
        #expect(symlink(installed, fixture.plugins + "/libFaulty.so") == 0)
        let session = try IsolationTests.Session(fixture: fixture, arguments: ["--restart-limit", "1000"])
        #expect(try session.ask("faulty://x-callback-url/fail").errorCode == "Failed")

        // Someone else can now write to `vendor`, and swaps in his library.
        let evil = scratch.file("build")
        #expect(mkdir(evil, 0o755) == 0)
        let evilLibrary = try TestPlugin.build("Faulty", source: Self.evilSource(marker: marker), into: evil)
        #expect(chmod(vendor, 0o777) == 0)
        #expect(rename(evilLibrary, installed) == 0)

        // The worker dies; its successor must not load the swapped file.
        #expect(try session.ask("faulty://x-callback-url/crash").errorCode == "PluginCrashed")
        let after = try session.ask("faulty://x-callback-url/fail")
        #expect(after.errorCode == "PluginUnavailable", "\(after)")
        #expect(after.params["errorMessage"]?.contains("\(vendor) on the way to it") == true, "\(after)")
        #expect(after.params["forged"] == nil)
        #expect(access(marker, F_OK) != 0, "the swapped library's code ran")
        try session.finish()
    }

    @Test("a manifest's library that others can write is refused before any of its code runs; --allow-insecure-plugins allows it")
    func manifestLibraryIsChecked() throws {
        let scratch = try Scratch()
        let marker = scratch.file("evil-ran")
        let plugins = scratch.file("plugins")
        #expect(mkdir(plugins, 0o755) == 0)
        let library = try TestPlugin.build("Evil", source: Self.evilSource(marker: marker), into: plugins)
        #expect(chmod(library, 0o777) == 0)
        let manifest = plugins + "/evil.xcallback.toml"
        try Data("""
            name = "evil"
            version = "1.0.0"
            library = "./libEvil.so"
            scheme = "evil"

            [[function]]
            declaration = "int evil_answer(void)"
            """.utf8).write(to: URL(fileURLWithPath: manifest))
        // The library would also be found as a plug-in itself: take it out
        // of the listing by naming the manifest alone.
        let checked = try xcallback(["check", manifest])
        #expect(checked.status != .exited(0))
        #expect(checked.stderr.contains("library './libEvil.so' refused"), "stderr: \(checked.stderr)")
        #expect(checked.stderr.contains("writable by others"), "stderr: \(checked.stderr)")
        #expect(access(marker, F_OK) != 0, "the library's constructor ran")

        // Without the sandbox, which would keep the constructor from leaving its mark.
        let allowed = try xcallback(["check", "--allow-insecure-plugins", "--sandbox", "off", manifest])
        #expect(allowed.status == .exited(0), "stderr: \(allowed.stderr)")
        #expect(access(marker, F_OK) == 0, "with the checks relaxed, the library loads")
    }
}

/// Copies a file (mode 0755).
func copyfile(_ source: String, to destination: String) -> Bool {
    guard let data = FileManager.default.contents(atPath: source) else { return false }
    guard FileManager.default.createFile(atPath: destination, contents: data) else { return false }
    return chmod(destination, 0o755) == 0
}

/// A FIFO named like a plug-in is refused at once, not waited on.
@Suite("Plug-in files that are not files", .ownThreads)
struct NotAFileTests {
    @Test("check on a FIFO named x.so answers at once: not a regular file")
    func checkOnAFIFO() throws {
        let scratch = try Scratch()
        let fifo = scratch.file("x.so")
        #expect(mkfifo(fifo, 0o600) == 0)
        let result = try xcallback(["check", fifo], timeout: 10)
        #expect(result.status != .exited(0))
        #expect(result.stderr.contains("not a regular file"), "stderr: \(result.stderr)")
    }
}
