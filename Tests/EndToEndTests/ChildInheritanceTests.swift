import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A child of the host inherits nothing it was not given (docs/routing-and-isolation.md,
/// "Isolation"): stdin is /dev/null, and no descriptor but the ones it
/// needs. Before, workers, probes and `--open` programs shared the host's
/// stdin: an `--open` program that ran `head -n 1` made requests vanish,
/// and a plug-in thread reading fd 0 took most of them.
@Suite("What children inherit", .ownThreads)
struct ChildInheritanceTests {
    /// `peek://x-callback-url/stdin`: reads whatever fd 0 has without
    /// waiting, and lists the worker's open descriptors.
    static let peekSource = #"""
        #include <dirent.h>
        #include <fcntl.h>
        #include <pthread.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        #include "xcallback.h"

        XCALLBACK_PLUGIN("peek", "1.0.0", "Reads fd 0 and lists open descriptors")

        static const xcallback_host_api *host;
        /* A worker may run two handlers at once (one whose thread the
         * machine's load held up is handed on): one listing must not see
         * the other's directory descriptor. */
        static pthread_mutex_t listing = PTHREAD_MUTEX_INITIALIZER;

        static void peek(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            char buffer[65536];
            long stolen = 0;
            int flags = fcntl(0, F_GETFL);
            if (flags >= 0) {
                fcntl(0, F_SETFL, flags | O_NONBLOCK);
                ssize_t count;
                while ((count = read(0, buffer, sizeof buffer)) > 0) stolen += count;
                fcntl(0, F_SETFL, flags);
            }
            char list[4096] = "";
            pthread_mutex_lock(&listing);
            DIR *directory = opendir("/proc/self/fd");
            struct dirent *entry;
            while (directory != NULL && (entry = readdir(directory)) != NULL) {
                if (entry->d_name[0] == '.' || atoi(entry->d_name) == dirfd(directory)) continue;
                if (list[0] != '\0') strncat(list, ",", sizeof list - strlen(list) - 1);
                strncat(list, entry->d_name, sizeof list - strlen(list) - 1);
            }
            if (directory != NULL) closedir(directory);
            pthread_mutex_unlock(&listing);
            char stolenText[32];
            snprintf(stolenText, sizeof stolenText, "%ld", stolen);
            xcallback_param params[] = { { "stolen", stolenText }, { "fds", list } };
            host->reply_success(reply, params, 2);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            return api->register_action(plugin, "peek", "stdin", peek, NULL);
        }
        """#

    @Test("a worker reading fd 0 gets nothing, and has only the descriptors it needs; 20,000 requests, each one record",
          .scaledTimeLimit(minutes: 2))
    func workerStdinIsDevNull() throws {
        let fixture = try HostFixture([], isolation: "process")
        try TestPlugin.build("Peek", source: Self.peekSource, into: fixture.plugins)
        // An extra descriptor the host itself inherited (as from a shell):
        // it must not reach the worker.
        var extra: [Int32] = [-1, -1]
        #expect(pipe(&extra) == 0)
        defer { close(extra[0]); close(extra[1]) }
        let lines = (0..<20_000).map { "peek://x-callback-url/stdin?n=\($0)" }
        let input = Array(lines.map { $0 + "\n" }.joined().utf8)
        let child = try ChildProcess(fixture.runPrefix + ["--output", "jsonl"], stdin: .bytes(input),
                                     inheritedDescriptors: [extra[0]])
        #expect(child.waitForExit(timeout: TestTiming.scaled(90)) == .exited(0), "stderr: \(child.stderr.suffix(2000))")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        var count: [String: Int] = [:]
        for record in records { count[record.input ?? "", default: 0] += 1 }
        #expect(records.count == lines.count, "\(records.count) records for \(lines.count) lines")
        #expect(lines.allSatisfy { count[$0] == 1 }, "some lines got no record, or more than one")
        let stolen = records.compactMap { Int($0.params["stolen"] ?? "") }.reduce(0, +)
        #expect(stolen == 0, "the plug-in read \(stolen) bytes of the host's input")
        // 3 is the socket to the host, 4 the plug-in's own file (loaded
        // through that descriptor, exactly as checked).
        let descriptors = Set(records.compactMap { $0.params["fds"] })
        #expect(descriptors == ["0,1,2,3,4"], "the worker's open descriptors: \(descriptors)")
    }

    @Test("an --open command that reads stdin takes none of the host's input; 20,000 requests, each one outcome",
          .scaledTimeLimit(minutes: 2))
    func openCommandStdinIsDevNull() throws {
        let fixture = try HostFixture(["Calculator"])
        let log = fixture.scratch.file("opened.log")
        let opener = fixture.scratch.file("opener")
        try installScript(at: opener, """
            #!/bin/sh
            # Reads all of its stdin, as a careless opener might, then notes its URL.
            cat > /dev/null
            printf '%s\\n' "$1" >> '\(log)'

            """)
        let lines = (0..<20_000).map { index in
            index % 100 == 0
                ? "calc://x-callback-url/add?lhs=\(index)&rhs=0&x-success=done://ok%3Fn%3D\(index)"
                : "calc://x-callback-url/add?lhs=\(index)&rhs=0"
        }
        let result = try fixture.run(["--open", opener], lines: lines, timeout: TestTiming.scaled(90))
        #expect(result.status == .exited(0), "stderr: \(result.stderr.suffix(2000))")
        let printed = result.lines.compactMap { recordParameters($0).first(where: { $0.name == "result" })?.value }
        let opened = (try? String(contentsOfFile: log, encoding: .utf8)).map(ChildProcess.lines) ?? []
        #expect(printed.count == 19_800, "records printed: \(printed.count)")
        #expect(opened.count == 200, "callbacks opened: \(opened.count)")
        let answered = Set(printed.compactMap(Int.init)).union(opened.compactMap { url in
            url.split(separator: "=").dropFirst().first.flatMap { Int($0.split(separator: "&").first ?? "") }
        })
        #expect(answered == Set(0..<20_000), "\(20_000 - answered.count) requests without an outcome")
    }
}

/// `--open` opens only schemes that ask another program (docs/usage.md, "--open"):
/// before, `xdg-open file:///etc/passwd?…` was run for any request that
/// named such a callback.
@Suite("--open schemes", .ownThreads)
struct OpenSchemeTests {
    static func opener(in fixture: HostFixture) throws -> (command: String, log: String) {
        let log = fixture.scratch.file("opened.log")
        let command = fixture.scratch.file("opener")
        try installScript(at: command, "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '\(log)'\n")
        return (command, log)
    }

    static let lines = [
        "calc://x-callback-url/add?lhs=1&rhs=2&x-success=file:///etc/passwd%3Fa%3D",
        "calc://x-callback-url/add?lhs=1&rhs=3&x-success=JavaScript:alert(1)",
        "calc://x-callback-url/add?lhs=1&rhs=4&x-success=file:///etc/shadow",
        "calc://x-callback-url/add?lhs=1&rhs=5&x-success=app://ok",
    ]

    @Test("file: and javascript: callbacks are written, not opened, with one warning per scheme; other schemes are opened")
    func dangerousSchemesAreRefused() throws {
        let fixture = try HostFixture(["Calculator"])
        let (command, log) = try Self.opener(in: fixture)
        let result = try fixture.run(["-k", "--open", command], lines: Self.lines)
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let opened = (try? String(contentsOfFile: log, encoding: .utf8)).map(ChildProcess.lines) ?? []
        #expect(opened == ["app://ok?result=6"])
        #expect(result.lines == ["file:///etc/passwd?a=&result=3", "JavaScript:alert(1)?result=4", "file:///etc/shadow?result=5"])
        #expect(result.stderr.components(separatedBy: "refused to open a 'file:' callback").count == 2, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("refused to open a 'javascript:' callback"), "stderr: \(result.stderr)")
    }

    @Test("--open-scheme file lets file: callbacks be opened")
    func operatorAllowsAScheme() throws {
        let fixture = try HostFixture(["Calculator"])
        let (command, log) = try Self.opener(in: fixture)
        let result = try fixture.run(["-k", "--open", command, "--open-scheme", "file"], lines: Self.lines)
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let opened = (try? String(contentsOfFile: log, encoding: .utf8)).map(ChildProcess.lines) ?? []
        #expect(Set(opened) == ["file:///etc/passwd?a=&result=3", "file:///etc/shadow?result=5", "app://ok?result=6"])
        #expect(result.lines == ["JavaScript:alert(1)?result=4"])
    }
}
