import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/usage.md ("run", "Error codes"): signals, stdout hygiene, closed stdout, plug-in
/// directories.
@Suite("Host lifecycle", .ownThreads)
struct LifecycleTests {
    @Test("SIGTERM/SIGINT: stop reading, the in-flight request still gets its record, exit 0 (SIGTERM) or 130 (SIGINT)",
          .scaledTimeLimit(minutes: 1), arguments: [SIGTERM, SIGINT])
    func drainOnSignal(signal: Int32) throws {
        let host = try HostFixture(["Faulty", "Calculator"])
        let child = try host.start()
        // The calc record proves both lines were read: the sleep is in flight.
        child.write("faulty://x-callback-url/sleep?ms=500\ncalc://x-callback-url/add?lhs=1&rhs=1\n")
        try #require(child.waitForStdoutLines(1, timeout: 10), "stderr: \(child.stderr)")
        let signalled = Date()
        child.send(signal: signal)
        let status = child.waitForExit(timeout: 10)
        let took = Date().timeIntervalSince(signalled)
        #expect(status == .exited(signal == SIGINT ? 130 : 0), "stderr: \(child.stderr)")
        #expect(child.stdoutLines == ["success?result=2", "success?slept=500"])
        #expect(took < 5, "took \(took) s after the signal")
        // stdin was never closed: the signal, not EOF, ended the host.
    }

    @Test("a request still running when the grace period ends is answered Timeout; exit 0", .scaledTimeLimit(minutes: 1))
    func gracePeriodExpires() throws {
        let host = try HostFixture(["Faulty", "Calculator"])
        let child = try host.start(["--grace-period", "0.5", "--output", "jsonl"])
        child.write("faulty://x-callback-url/sleep?ms=20000\ncalc://x-callback-url/add?lhs=1&rhs=1\n")
        try #require(child.waitForStdoutLines(1, timeout: 10))
        let signalled = Date()
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        let took = Date().timeIntervalSince(signalled)
        #expect(took < 5, "took \(took) s")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == 2)
        #expect(records.last?.errorCode == "Timeout")
        #expect(records.last?.input == "faulty://x-callback-url/sleep?ms=20000")
    }

    @Test("nothing a plug-in prints reaches stdout: exactly one record")
    func noiseStaysOffStdout() throws {
        let host = try HostFixture(["Faulty"])
        for format in ["url", "jsonl"] {
            let result = try host.run(["--output", format], lines: ["faulty://x-callback-url/noise"])
            #expect(result.status == .exited(0))
            #expect(result.lines.count == 1, "\(format): stdout was \(result.stdout)")
            #expect(!result.stdout.contains("faulty: noise"))
            if format == "url" { #expect(result.stdout == "success\n") }
            // Where the noise went instead (diagnostics): stderr.
            #expect(result.stderr.contains("faulty: noise on stderr"))
        }
    }

    @Test("logs, even at --log-level trace, go to stderr: stdout holds only records")
    func logsStayOffStdout() throws {
        let host = try HostFixture()
        let result = try host.run(["--log-level", "trace", "--output", "jsonl"], lines: [
            "calc://x-callback-url/add?lhs=1&rhs=1", "faulty://x-callback-url/twice", "faulty://x-callback-url/noise",
            "nope://x", "not a url",
        ])
        #expect(result.status == .exited(0))
        #expect(try result.records().count == 5)
        // Log lines below the default level (not just the summary every run
        // prints) reached stderr.
        #expect(result.stderr.contains(" info xcallback:"), "stderr: \(result.stderr)")
    }

    @Test("SIGHUP rescans the plug-in directories: a plug-in added later becomes routable", .scaledTimeLimit(minutes: 1))
    func sighupRescan() throws {
        let host = try HostFixture(["Calculator"])
        let child = try host.start()
        let alert = "myapp://alert/show?title=a&message=b\n"
        child.write(alert)
        try #require(child.waitForStdoutLines(1, timeout: 10))
        #expect(child.stdoutLines.first?.hasPrefix("error?errorCode=NotFoundAction&") == true)

        // Copied under a hidden name, then renamed: never seen half-copied.
        let hidden = host.plugins + "/.libAlert.so.partial"
        try FileManager.default.copyItem(atPath: Products.plugin("Alert"), toPath: hidden)
        chmod(hidden, 0o755)
        #expect(rename(hidden, host.plugins + "/libAlert.so") == 0)
        child.send(signal: SIGHUP)

        // The rescan runs on the host's own time: ask until it answers (bounded).
        var answered = 1
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline, child.stdoutLines.last != "success?title=a&message=b" {
            child.write(alert)
            answered += 1
            guard child.waitForStdoutLines(answered, timeout: 5) else { break }
        }
        #expect(child.stdoutLines.last == "success?title=a&message=b", "stdout: \(child.stdout)")
        child.closeInput()
        #expect(child.waitForExit(timeout: 10) == .exited(0), "SIGHUP must not stop the host; stderr: \(child.stderr)")
        #expect(child.stdoutLines.count == answered)
    }

    @Test("a handler completing twice: one record, the first completion")
    func completesTwice() throws {
        let host = try HostFixture(["Faulty"])
        let result = try host.run(lines: ["faulty://x-callback-url/twice", "faulty://x-callback-url/twice?x-success=app://ok"])
        #expect(result.status == .exited(0))
        #expect(result.lines.sorted() == ["app://ok?completion=1", "success?completion=1"])
    }

    @Test("a closed stdout ends the host quietly, even with stdin still open", .scaledTimeLimit(minutes: 1))
    func closedStdoutWhileReading() throws {
        let host = try HostFixture(["Calculator"])
        let child = try host.start(closeStdoutAfterLines: 1)
        child.write("calc://x-callback-url/add?lhs=1&rhs=1\n")
        try #require(child.waitForStdoutClosed(timeout: 10), "the first record never came")
        // The reader is gone: the next record's write fails.
        child.write("calc://x-callback-url/add?lhs=2&rhs=2\n")
        let status = child.waitForExit(timeout: 10)
        #expect(status == .exited(0), "stderr: \(child.stderr)")
        #expect(!looksLikeACrash(child.stderr), "stderr: \(child.stderr)")
    }

    @Test("a closed stdout mid-flood ends the host quietly (like `| head -n 1`)", .scaledTimeLimit(minutes: 1))
    func closedStdoutFlood() throws {
        let host = try HostFixture(["Calculator"])
        let lines = (0..<20_000).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1\n" }.joined()
        let child = try host.start(stdin: .bytes(Array(lines.utf8)), closeStdoutAfterLines: 1)
        let status = child.waitForExit(timeout: 20)
        #expect(status == .exited(0), "stderr: \(child.stderr)")
        #expect(!looksLikeACrash(child.stderr), "stderr: \(child.stderr)")
        #expect(child.stdoutLines.first == "success?result=1")
    }

    // MARK: plug-in directories

    @Test("an unusable explicit plug-in directory stops the host: non-zero exit, message naming it")
    func unusablePluginDirectory() throws {
        let scratch = try Scratch()
        let worldWritable = scratch.file("world")
        let groupWritable = scratch.file("group")
        mkdir(worldWritable, 0o755)
        chmod(worldWritable, 0o777)
        mkdir(groupWritable, 0o755)
        chmod(groupWritable, 0o775)
        let regularFile = scratch.file("file.so")
        try FileManager.default.copyItem(atPath: Products.plugin("Calculator"), toPath: regularFile)
        let good = try scratch.pluginDirectory(["Calculator"])

        for directory in [scratch.file("missing"), worldWritable, groupWritable, regularFile] {
            for command in [["run"], ["plugins"], ["routes"]] {
                let arguments = command + ["--plugins", good, "--plugins", directory]
                let result = try xcallback(arguments, lines: ["calc://x-callback-url/add?lhs=1&rhs=1"], timeout: 10)
                #expect(result.status != .exited(0), "\(arguments)")
                #expect(result.status != .signaled(SIGKILL), "\(arguments)")
                #expect(result.stderr.contains(directory), "\(arguments): \(result.stderr)")
                if command == ["run"] { #expect(result.stdout.isEmpty, "\(arguments)") }
            }
        }
        // The opt-out accepts the writable directories.
        let allowed = try xcallback(["run", "--isolation", "none", "--allow-insecure-plugins", "--plugins", worldWritable],
                                    lines: ["calc://x-callback-url/add?lhs=1&rhs=1"], timeout: 10)
        #expect(allowed.status == .exited(0))
        #expect(allowed.lines.first?.hasPrefix("error?errorCode=NotFoundAction&") == true)
    }

    @Test("a group-writable plug-in file is refused with a message naming it; the others still load")
    func insecurePluginFile() throws {
        let host = try HostFixture(["Calculator", "Alert"])
        let alert = host.plugins + "/libAlert.so"
        chmod(alert, 0o775)
        let result = try host.run(["-k"], lines: ["calc://x-callback-url/add?lhs=1&rhs=1", "myapp://alert/show?title=a&message=b"])
        #expect(result.status == .exited(0))
        #expect(result.lines.first == "success?result=2")
        #expect(result.lines.last?.hasPrefix("error?errorCode=NotFoundAction&") == true)
        #expect(result.stderr.contains(alert), "stderr: \(result.stderr)")

        let listing = try xcallback(["plugins", "--plugins", host.plugins, "--json"])
        #expect(listing.status == .exited(0))
        let objects = try listing.lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        let rejected = objects.first { ($0["path"] as? String) == alert }
        #expect(rejected?["status"] as? String == "rejected")
        #expect((rejected?["error"] as? String)?.contains("writable") == true)
    }

    @Test("XCALLBACK_PLUGIN_PATH is used when no --plugins is given")
    func pluginPathEnvironment() throws {
        let scratch = try Scratch()
        let first = try scratch.pluginDirectory(["Calculator"], name: "one")
        let second = try scratch.pluginDirectory(["Alert"], name: "two")
        var environment = ProcessInfo.processInfo.environment
        environment["XCALLBACK_PLUGIN_PATH"] = first + ":" + second
        let child = try ChildProcess(["run", "--isolation", "none", "-k"], stdin: .bytes(Array("calc://x-callback-url/add?lhs=1&rhs=1\nmyapp://alert/show?title=a&message=b\n".utf8)),
                                     environment: environment)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        #expect(child.stdoutLines == ["success?result=2", "success?title=a&message=b"])
    }

    @Test("bad flags: non-zero exit, nothing on stdout")
    func badFlags() throws {
        let host = try HostFixture(["Calculator"])
        for flags in [["--output", "xml"], ["--timeout", "0"], ["--timeout", "-1"],
                      ["--isolation", "sandbox"], ["--no-such-flag"]] {
            let result = try host.run(flags, lines: ["calc://x-callback-url/add?lhs=1&rhs=1"], timeout: 10)
            #expect(result.status != .exited(0), "\(flags)")
            #expect(result.status != .signaled(SIGKILL), "\(flags)")
            #expect(result.stdout.isEmpty, "\(flags): \(result.stdout)")
            #expect(!result.stderr.isEmpty, "\(flags)")
        }
    }

    // MARK: docs/routing-and-isolation.md smoke tests

    @Test("hot drop-in: a plug-in copied into the directory of a socket host is routable within 2 s, no SIGHUP (SPEC 4)",
          .scaledTimeLimit(minutes: 1))
    func hotDropIn() throws {
        let host = try HostFixture(["Calculator"])
        let socketPath = host.scratch.file("s")
        let child = try host.start(["--socket", socketPath], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child))
        let hidden = host.plugins + "/.libAlert.so.partial"
        try FileManager.default.copyItem(atPath: Products.plugin("Alert"), toPath: hidden)
        chmod(hidden, 0o755)
        #expect(rename(hidden, host.plugins + "/libAlert.so") == 0)
        let added = Date()
        var last: RunResult?
        repeat {
            if last != nil { usleep(50_000) }  // polling: the host gives no event for it
            last = try xcallback(["call", "--socket", socketPath, "myapp://alert/show?title=a&message=b"])
        } while last?.status != .exited(0) && Date().timeIntervalSince(added) < TestTiming.scaled(3)
        #expect(last?.lines == ["success?title=a&message=b"], "host stderr: \(child.stderr)")
        #expect(Date().timeIntervalSince(added) < TestTiming.scaled(2.5))
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
    }

    @Test("--isolation process: a crash is PluginCrashed and the host goes on (SPEC 4)", .scaledTimeLimit(minutes: 1))
    func processIsolationCrash() throws {
        let host = try HostFixture(["Faulty", "Calculator"], isolation: "process")
        let result = try host.run(["-k", "--output", "jsonl"], lines: [
            "faulty://x-callback-url/crash", "calc://x-callback-url/add?lhs=1&rhs=1",
        ])
        #expect(result.status == .exited(0))
        let records = try result.records()
        #expect(records.first?.errorCode == "PluginCrashed")
        #expect(records.last?.params == ["result": "2"])
    }
}
