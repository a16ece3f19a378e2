import CXCallback
import Dispatch
import Foundation
import Logging
import Testing
import XCallbackBridge
import XCallbackSandbox
import XCallbackURL

@testable import XCallbackHost
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `PluginProbe.probe`, what `xcallback check`, `plugins` and `routes`
/// learn a plug-in from: a worker of the built `xcallback` executable,
/// started as `run` starts one, and its handshake.
@Suite("Plug-in probe (a worker's handshake)", .ownThreads)
struct PluginProbeTests {
    private func probe(_ path: String, allowInsecure: Bool = false, executable: String = Paths.xcallback,
                       timeLimit: Int32 = PluginProbe.timeLimit) -> PluginStatus {
        PluginProbe(executable: executable, logger: Logger(label: "probe-tests"))
            .probe(path, security: FileSecurity(allowInsecure: allowInsecure), sandboxing: WorkerSandboxing(mode: .off),
                   timeLimit: timeLimit)
    }

    /// A plug-in whose constructor runs `body` (C statements) when loaded.
    private func constructorPlugin(_ name: String, _ body: String, in directory: TemporaryDirectory) throws -> String {
        try CCompiler.plugin(name, source: """
            #define _POSIX_C_SOURCE 200809L
            #include <signal.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <unistd.h>
            #include "xcallback.h"

            XCALLBACK_PLUGIN("\(name)", "1.0.0", "runs code in its constructor")

            __attribute__((constructor)) static void on_load(void)
            {
                \(body)
            }

            static const xcallback_host_api *host;
            static void ok(const xcallback_request *r, xcallback_reply reply, void *u)
            {
                (void)r, (void)u;
                host->reply_success(reply, NULL, 0);
            }

            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
            {
                host = api;
                return api->register_action(plugin, "\(name)", "ok", ok, NULL);
            }
            """, in: directory)
    }

    @Test func theXcallbackExecutableIsBuilt() {
        #expect(access(Paths.xcallback, X_OK) == 0, "\(Paths.xcallback) is missing: swift test must build it")
    }

    @Test func aValidPluginIsReportedWithItsRoutes() {
        let status = probe(Paths.sample("Alert"))
        #expect(status.error == nil, "\(String(describing: status.error))")
        #expect(status.isLoaded)
        #expect(status.info?.name == "alert")
        #expect(status.info?.version == "1.0.0")
        #expect(status.info?.summary == "Shows an alert: myapp://alert/show?title=&message=")
        #expect(status.info?.abiMajor == 1 && status.info?.abiMinor == Int(XCALLBACK_ABI_MINOR))
        #expect(status.routes.map(\.text) == ["myapp://alert/show"])
    }

    /// What `ready` carries past identity and routes: the routes refused
    /// because plug-ins loaded before it own them (`taken`).
    @Test func routesAlreadyTakenAreReportedRefused() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("yields", source: """
            #include "xcallback.h"
            XCALLBACK_PLUGIN("yields", "1.0.0", "lets a route go")
            static void ok(const xcallback_request *r, xcallback_reply reply, void *u) { (void)r, (void)reply, (void)u; }
            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
            {
                (void)api->register_action(plugin, "t", "taken", ok, NULL);
                return api->register_action(plugin, "t", "free", ok, NULL);
            }
            """, in: directory)
        let status = PluginProbe(executable: Paths.xcallback, logger: Logger(label: "probe-tests"))
            .probe(path, security: FileSecurity(allowInsecure: false), sandboxing: WorkerSandboxing(mode: .off),
                   taken: [QueryParameter(name: "t://x-callback-url/taken", value: "other")])
        #expect(status.error == nil, "\(String(describing: status.error))")
        #expect(status.refusedRoutes == [RefusedRoute(pattern: "t://x-callback-url/taken", owner: "other")])
        #expect(status.routes.map(\.text) == ["t://x-callback-url/free"])
    }

    @Test func aSwiftPluginIsReportedWithItsRoutes() {
        let status = probe(Paths.sample("Pokedex"))
        #expect(status.isLoaded)
        #expect(status.info?.summary == "Looks up Pokémon by number or by type")
        #expect(status.routes.map(\.text) == ["pokedex://pokemons/:pokedexID", "pokedex://pokemons"])
    }

    @Test func theReportKeepsTabsNewlinesAndBackslashes() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("escapes", source: """
            #include "xcallback.h"
            XCALLBACK_PLUGIN("escapes", "1.0\\tbeta", "tab\\there, back\\\\slash, new\\nline")
            static void ok(const xcallback_request *r, xcallback_reply reply, void *u) { (void)r, (void)reply, (void)u; }
            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
            {
                return api->register_pattern(plugin, "esc://a/:x", ok, NULL);
            }
            """, in: directory)
        let status = probe(path)
        #expect(status.error == nil, "\(String(describing: status.error))")
        #expect(status.info?.version == "1.0\tbeta")
        #expect(status.info?.summary == "tab\there, back\\slash, new\nline")
        #expect(status.routes.map(\.text) == ["esc://a/:x"])
    }

    @Test func aConstructorThatCrashesIsReportedAndThisProcessSurvives() throws {
        let directory = try TemporaryDirectory()
        // A real invalid memory access, as a buggy constructor makes.
        let path = try constructorPlugin("segv", "volatile int *volatile p = NULL; *p = 42;", in: directory)
        let status = probe(path)
        #expect(!status.isLoaded)
        let error = try #require(status.error)
        #expect(error.reason == .crashed("signal 11, SIGSEGV"))
        #expect(error.description == "\(path): crashed while loading (signal 11, SIGSEGV)")
        // Still here: the crash happened in the child.
        #expect(getpid() > 0)
    }

    /// `raise(SIGSEGV)` in a constructor: the child (the `xcallback`
    /// executable) runs with the Swift runtime's backtracer, whose SIGSEGV
    /// handler prints a crash report, resets the disposition and returns;
    /// a raised signal (unlike a fault) is not raised again, so the plug-in
    /// goes on loading and the probe calls it valid.
    @Test func aConstructorThatRaisesSIGSEGVIsReportedAsCrashed() throws {
        let directory = try TemporaryDirectory()
        let path = try constructorPlugin("raises", "raise(SIGSEGV);", in: directory)
        let status = probe(path)
        #expect(status.error?.reason == .crashed("signal 11, SIGSEGV"))
        #expect(!status.isLoaded)
    }

    @Test func aConstructorThatAbortsIsReported() throws {
        let directory = try TemporaryDirectory()
        let path = try constructorPlugin("aborts", "abort();", in: directory)
        #expect(probe(path).error?.reason == .crashed("signal 6, SIGABRT"))
    }

    @Test func aTruncatedPluginCrashesOnlyTheChild() throws {
        // The same cut that kills an in-process dlopen (see LoaderRejectTests).
        let directory = try TemporaryDirectory()
        let path = try directory.copy(Paths.sample("Alert"), to: "truncated.so")
        #expect(truncate(path, 4096) == 0)
        let status = probe(path)
        #expect(!status.isLoaded)
        // Caught before dlopen could fault (SharedLibraryFile checks the ELF
        // segments against the file size).
        #expect(status.error?.description.contains("truncated") == true, "\(String(describing: status.error))")
    }

    @Test func printingInTheConstructorCannotForgeTheReport() throws {
        let directory = try TemporaryDirectory()
        let path = try constructorPlugin("chatty", #"""
            printf("error\tnotAPlugin\tforged\n");
                fflush(stdout);
                write(1, "plugin\tforged\t9\t9.9\tforged\n", 27);
            """#, in: directory)
        let status = probe(path)
        #expect(status.error == nil, "\(String(describing: status.error))")
        #expect(status.info?.name == "chatty")
        #expect(status.routes.map(\.text) == ["chatty://x-callback-url/ok"])
    }

    @Test func aConstructorThatExitsEndsBeforeItsWorkerIsReady() throws {
        let directory = try TemporaryDirectory()
        let path = try constructorPlugin("exits", "_exit(0);", in: directory)
        let error = try #require(probe(path).error)
        #expect(error.description == "\(path): the worker exited with status 0 before it was ready")
    }

    @Test func notAPlugin() throws {
        // Map libm if nothing has yet, then find its file.
        #expect(dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL) != nil)
        let libm = try #require(Self.loadedLibrary(named: "libm.so.6"))
        let status = probe(libm)
        #expect(!status.isLoaded)
        #expect(status.error?.description == "\(libm): not an xcallback plug-in (no xcallback_plugin_descriptor symbol)")
    }

    @Test func badDescriptorAndFailedRegistrationKeepTheirMessages() throws {
        let directory = try TemporaryDirectory()
        let major = try CCompiler.plugin("major2", source: CSource.descriptor(major: "2"), in: directory)
        let refuses = try CCompiler.plugin(
            "refuses", source: CSource.descriptor(name: "\"refuses\"", registerStatus: "-42"), in: directory)

        let majorError = try #require(probe(major).error)
        #expect(majorError.description.hasPrefix("\(major): descriptor field 'abi_major' is 2, but this host speaks ABI major 1"))
        let refusesError = try #require(probe(refuses).error)
        #expect(refusesError.description == "\(refuses): xcallback_plugin_register failed with status -42")
    }

    @Test func insecureFileIsRefusedWithoutRunningIt() throws {
        let directory = try TemporaryDirectory()
        let path = try constructorPlugin("open", "abort();", in: directory)
        chmod(path, 0o666)
        let error = try #require(probe(path).error)
        guard case .insecure = error.reason else { Issue.record("\(error)"); return }
        #expect(error.description.hasPrefix("\(path): refused: file is writable by others"))
        // Allowed: it runs (and aborts in the child).
        #expect(probe(path, allowInsecure: true).error?.reason == .crashed("signal 6, SIGABRT"))
    }

    @Test func aMissingExecutableIsReported() throws {
        let status = probe(Paths.sample("Alert"), executable: "/nonexistent/xcallback")
        let error = try #require(status.error)
        #expect(error.description.contains("cannot start a worker (/nonexistent/xcallback)"), "\(error)")
    }

    /// A constructor that never returns: the worker is killed at the time
    /// limit, and the file refused (it once hung `check` and `plugins`).
    @Test func aConstructorThatHangsDoesNotHangTheProbe() throws {
        let directory = try TemporaryDirectory()
        let path = try constructorPlugin("hangs", "for (;;) pause();", in: directory)
        let done = DispatchSemaphore(value: 0)
        let result = Lock<PluginStatus?>(nil)
        Thread.detachNewThread {
            let status = probe(path, timeLimit: 1)
            result.withLock { $0 = status }
            done.signal()
        }
        let finished = done.wait(timeout: .now() + 5) == .success
        #expect(finished, "the probe was still waiting after 5 s with a 1 s limit")
        #expect(result.withLock { $0 }?.error?.description.contains("did not finish loading within 1 s") == true)
        if !finished {
            // Clean up: kill our own worker (found by parent pid and its argument), then the probe returns.
            let children = Self.childProcesses(withArgument: path)
            #expect(children.count == 1)
            for child in children { kill(child, SIGKILL) }
            #expect(done.wait(timeout: .now() + 10) == .success)
            #expect(result.withLock { $0 }?.error?.reason == .crashed("signal 9, SIGKILL"))
        }
    }

    // MARK: helpers

    /// The file of a library mapped into this process, from /proc/self/maps.
    static func loadedLibrary(named name: String) -> String? {
        for line in readProcFile("/proc/self/maps").split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if path.hasSuffix("/" + name) { return path }
        }
        return nil
    }

    /// A /proc file, read to its end (its size is 0 to stat).
    static func readProcFile(_ path: String) -> String {
        // /proc files report size 0: read to the end, not by size.
        guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? handle.close() }
        return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
    }

    /// Children of this process whose command line includes `argument`.
    static func childProcesses(withArgument argument: String) -> [pid_t] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { pid in
            let stat = readProcFile("/proc/\(pid)/stat")
            guard let close = stat.lastIndex(of: ")") else { return false }
            // Fields after "(comm)": state, ppid, ...
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == me else { return false }
            let arguments = readProcFile("/proc/\(pid)/cmdline").split(separator: "\0").map(String.init)
            return arguments.contains(argument)
        }
    }
}
