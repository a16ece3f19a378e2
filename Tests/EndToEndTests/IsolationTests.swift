import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/routing-and-isolation.md, `--isolation process`: a plug-in's failure is an error
/// outcome, never the host's end, and nothing is lost or replayed.
@Suite("Process isolation", .ownThreads, .serialized)
struct IsolationTests {
    /// A host on a pipe, answering in jsonl; `ask` sends one line and waits
    /// for its record, so each request reaches the worker alone.
    final class Session: @unchecked Sendable {
        let fixture: HostFixture
        let host: ChildProcess
        private var answered = 0

        convenience init(_ plugins: [String] = Products.pluginNames, arguments: [String] = []) throws {
            try self.init(fixture: HostFixture(plugins, isolation: "process"), arguments: arguments)
        }

        /// A session on a fixture the caller has set up.
        init(fixture: HostFixture, arguments: [String] = []) throws {
            self.fixture = fixture
            host = try fixture.start(["--output", "jsonl"] + arguments, stdin: .pipe)
        }

        func ask(_ line: String, timeout: Double = 10) throws -> Record {
            #expect(host.write(line + "\n"))
            answered += 1
            try #require(host.waitForStdoutLines(answered, timeout: timeout),
                         "no record for \(line) within \(timeout) s; stderr: \(host.stderr)")
            return try Record(jsonLine: host.stdoutLines[answered - 1])
        }

        /// Ends input; the host must exit 0 and leave no worker behind.
        func finish() throws {
            let workers = hostProcesses(of: host.pid)
            host.closeInput()
            #expect(host.waitForExit(timeout: 15) == .exited(0), "stderr: \(host.stderr)")
            #expect(!looksLikeACrash(host.stderr.replacingOccurrences(of: "on purpose", with: "")))
            for worker in workers {
                #expect(waitUntilGone(worker, timeout: 5), "worker \(worker) outlived the host")
            }
        }
    }

    @Test("crash, abort and exit are PluginCrashed with the signal or status; the next request succeeds",
          .scaledTimeLimit(minutes: 1))
    func crashesBecomeOutcomes() throws {
        let session = try Session(["Faulty", "Calculator"])
        let expectations = [("crash", "SIGSEGV"), ("abort", "SIGABRT"), ("exit", "status 3")]
        for (action, mention) in expectations {
            let crashed = try session.ask("faulty://x-callback-url/\(action)")
            #expect(crashed.outcome == "error")
            #expect(crashed.errorCode == "PluginCrashed", "\(crashed)")
            #expect(crashed.errorDomain == "xcallback")
            #expect(crashed.params["errorMessage"]?.contains(mention) == true, "\(crashed)")
            // The worker is restarted: the same plug-in answers again.
            let after = try session.ask("faulty://x-callback-url/fail")
            #expect(after.errorCode == "Failed", "\(after)")
            #expect(try session.ask("calc://x-callback-url/add?lhs=1&rhs=2").params["result"] == "3")
        }
        try session.finish()
    }

    @Test("a crash loop disables the plug-in (PluginUnavailable); the others keep answering",
          .scaledTimeLimit(minutes: 1))
    func crashLoopIsQuarantined() throws {
        let session = try Session(["Faulty", "Calculator"], arguments: ["--restart-limit", "2", "--restart-window", "60"])
        var codes: [String] = []
        for _ in 0..<4 {
            codes.append(try session.ask("faulty://x-callback-url/crash").errorCode ?? "-")
        }
        #expect(codes == ["PluginCrashed", "PluginCrashed", "PluginCrashed", "PluginUnavailable"], "\(codes)")
        let disabled = try session.ask("faulty://x-callback-url/fail")
        #expect(disabled.errorCode == "PluginUnavailable")
        #expect(disabled.params["errorMessage"]?.contains("disabled") == true)
        #expect(try session.ask("calc://x-callback-url/add?lhs=2&rhs=2").params["result"] == "4")
        // SIGHUP reloads: the plug-in answers again.
        session.host.send(signal: SIGHUP)
        var answer = try session.ask("faulty://x-callback-url/fail")
        let deadline = Date(timeIntervalSinceNow: 5)
        while answer.errorCode == "PluginUnavailable" && Date() < deadline {
            answer = try session.ask("faulty://x-callback-url/fail")
        }
        #expect(answer.errorCode == "Failed", "\(answer)")
        try session.finish()
    }

    @Test("hang and never are Timeout in bounded time, distinct from PluginCrashed", .scaledTimeLimit(minutes: 1))
    func hangsAreTimeouts() throws {
        let session = try Session(["Faulty"], arguments: ["--timeout", "1"])
        for action in ["hang", "never"] {
            let start = Date()
            let record = try session.ask("faulty://x-callback-url/\(action)", timeout: 6)
            #expect(record.errorCode == "Timeout", "\(action): \(record)")
            #expect(Date().timeIntervalSince(start) < 5, "\(action) took \(Date().timeIntervalSince(start)) s")
            // A hung worker is replaced; the plug-in keeps answering.
            #expect(try session.ask("faulty://x-callback-url/fail").errorCode == "Failed")
        }
        try session.finish()
    }

    @Test("whatever a plug-in prints never reaches stdout", .scaledTimeLimit(minutes: 1))
    func noiseStaysOffStdout() throws {
        let fixture = try HostFixture(["Faulty"], isolation: "process")
        let result = try fixture.run(lines: ["faulty://x-callback-url/noise"])
        #expect(result.status == .exited(0))
        #expect(result.lines == ["success"], "stdout: \(result.stdout)")
        #expect(result.stderr.contains("noise on stdout"))
    }

    @Test("thousands of mixed requests with crashes: one record each, nothing lost", .scaledTimeLimit(minutes: 2))
    func mixedRunLosesNothing() throws {
        let fixture = try HostFixture(["Faulty", "Calculator", "Pokedex"], isolation: "process")
        var lines: [String] = []
        var kinds: [String: String] = [:]
        for index in 0..<3000 {
            let line: String
            switch index % 100 {
            case 17, 58: line = "faulty://x-callback-url/crash?n=\(index)"
            case 31: line = "faulty://x-callback-url/fail?n=\(index)"
            case 44: line = "pokedex://pokemons/\(index % 151 + 1)?n=\(index)"
            default: line = "calc://x-callback-url/add?lhs=\(index)&rhs=1"
            }
            lines.append(line)
            kinds[line] = String(line.prefix(while: { $0 != ":" }))
        }
        let result = try fixture.run(["--output", "jsonl", "--restart-limit", "1000"], lines: lines, timeout: 90)
        #expect(result.status == .exited(0), "stderr tail: \(result.stderr.suffix(500))")
        let records = try result.records()
        #expect(records.count == lines.count)
        #expect(Set(records.compactMap(\.input)) == Set(lines), "every line answered once")
        for record in records {
            switch kinds[record.input ?? ""] {
            case "calc", "pokedex":
                #expect(record.outcome == "success", "\(record)")
            case "faulty":
                let crash = record.input?.contains("/crash") == true
                let allowed: Set<String> = crash ? ["PluginCrashed"] : ["Failed", "PluginCrashed"]
                #expect(allowed.contains(record.errorCode ?? ""), "\(record)")
            default:
                Issue.record("unexpected record \(record)")
            }
        }
    }

    @Test("workers are forked from one zygote, which ps shows as workers; a zygote killed mid-run takes its workers, and new ones are forked from a new zygote",
          .scaledTimeLimit(minutes: 1))
    func zygote() throws {
        let session = try Session(["Faulty", "Calculator"])
        #expect(try session.ask("calc://x-callback-url/add?lhs=1&rhs=1").params["result"] == "2")
        let children = childProcesses(of: session.host.pid)
        #expect(children.count == 1, "the host's children: \(children)")
        let zygote = try #require(children.first)
        let workers = workerProcesses(of: session.host.pid)
        #expect(workers.count == 2, "workers: \(workers)")
        for worker in workers {
            let bytes = FileManager.default.contents(atPath: "/proc/\(worker)/cmdline") ?? Data()
            let commandLine = String(decoding: bytes.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
            #expect(commandLine.contains(" __worker \(session.fixture.plugins)/lib"), "worker \(worker): \(commandLine)")
        }
        kill(zygote, SIGKILL)
        for worker in workers { #expect(waitUntilGone(worker, timeout: TestTiming.scaled(5)), "worker \(worker) outlived its zygote") }
        // The next requests are answered by workers forked from a new zygote.
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(20))
        var answer = try session.ask("calc://x-callback-url/add?lhs=2&rhs=2", timeout: TestTiming.scaled(20))
        while answer.params["result"] != "4" && Date() < deadline {
            answer = try session.ask("calc://x-callback-url/add?lhs=2&rhs=2", timeout: TestTiming.scaled(20))
        }
        #expect(answer.params["result"] == "4", "\(answer)")
        let newZygote = childProcesses(of: session.host.pid)
        #expect(newZygote.count == 1 && newZygote != [zygote], "the host's children: \(newZygote)")
        try session.finish()
    }

    @Test("a stopped zygote is given up on after its deadline: the worker it owed is executed instead, nothing is started twice, and the host still exits",
          .scaledTimeLimit(minutes: 1))
    func stoppedZygote() throws {
        let session = try Session(["Faulty", "Calculator"], arguments: ["--timeout", "1", "--log-level", "info"])
        #expect(try session.ask("calc://x-callback-url/add?lhs=1&rhs=1").params["result"] == "2")
        let zygote = try #require(childProcesses(of: session.host.pid).first(where: isZygote))
        kill(zygote, SIGSTOP)
        // A hung handler: Timeout, and its worker is replaced, which needs a
        // fork the stopped zygote will not make.
        #expect(try session.ask("faulty://x-callback-url/hang").errorCode == "Timeout")
        #expect(try session.ask("calc://x-callback-url/add?lhs=2&rhs=2").params["result"] == "4")
        // The fork's deadline is 10 s; then the worker is executed.
        #expect(session.host.waitForStderr(containing: "restarted plug-in 'faulty'", timeout: TestTiming.scaled(30)),
                "\(session.host.stderr)")
        let answer = try session.ask("faulty://x-callback-url/cancel")
        #expect(answer.outcome == "cancel", "\(answer)")
        // The stuck zygote is left alone (the calculator's worker is its
        // child); resumed, it forks no second faulty worker with the first
        // one's socket: one worker per plug-in.
        kill(zygote, SIGCONT)
        #expect(try session.ask("calc://x-callback-url/add?lhs=3&rhs=3").params["result"] == "6")
        #expect(try session.ask("faulty://x-callback-url/cancel").outcome == "cancel")
        // (A child it forks late exits at once, its setup socket closed.)
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(5))
        var workers = workerProcesses(of: session.host.pid).filter(isRunning)
        while workers.count != 2 && Date() < deadline {
            usleep(20_000)
            workers = workerProcesses(of: session.host.pid).filter(isRunning)
        }
        #expect(workers.count == 2, "workers: \(workers)")
        #expect(session.host.stderr.contains("hung past its deadline"), "\(session.host.stderr)")
        try session.finish()
    }

    @Test("a worker that stops reading holds up the other plug-ins' requests for about a second, not until its deadline, and SIGTERM still ends the host",
          .scaledTimeLimit(minutes: 1))
    func wedgedWorker() throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: "process")
        let host = try fixture.start(["--timeout", "60", "--grace-period", "1"], stdin: .pipe)
        // 66 handlers that never return take every thread the worker has
        // (64 stalled, and the reader), so it stops reading its socket; then
        // a few long lines, more than it and its socket hold, so the host's
        // write to it blocks with few of them left; then the calculator's.
        var lines = (0..<66).map { "faulty://x-callback-url/hang?n=\($0)" }
        let pad = String(repeating: "p", count: 60_000)
        lines += (0..<10).map { "faulty://x-callback-url/cancel?n=\($0)&pad=\(pad)" }
        lines += (1...3).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1" }
        let started = Date()
        // From a thread of its own: the host may read no more for a while.
        let input = lines.joined(separator: "\n") + "\n"
        Thread.detachNewThread { _ = host.write(input) }
        #expect(host.waitForStdout(timeout: TestTiming.scaled(20)) { output in
            ["success?result=2", "success?result=3", "success?result=4"].allSatisfy(output.contains)
        }, "stdout: \(host.stdout.suffix(300)); stderr: \(host.stderr)")
        // Before its own deadline (60 s), with the faulty worker still stuck.
        #expect(Date().timeIntervalSince(started) < 20)
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: TestTiming.scaled(20)) == .exited(0), "stderr: \(host.stderr)")
    }

    @Test("workers die with the host, even when it is killed with SIGKILL", .scaledTimeLimit(minutes: 1))
    func noOrphansAfterSIGKILL() throws {
        let session = try Session(["Faulty", "Calculator"])
        #expect(try session.ask("calc://x-callback-url/add?lhs=1&rhs=1").params["result"] == "2")
        let workers = workerProcesses(of: session.host.pid)
        #expect(workers.count == 2, "workers: \(workers)")
        let started = hostProcesses(of: session.host.pid)
        session.host.send(signal: SIGKILL)
        _ = session.host.waitForExit(timeout: 10)
        for worker in started {
            #expect(waitUntilGone(worker, timeout: 5), "worker \(worker) outlived a SIGKILLed host")
        }
    }
}

/// The host's workers: its children, and the children of its zygote (the
/// process workers are forked from, which is not a worker itself).
func workerProcesses(of host: pid_t) -> [pid_t] {
    childProcesses(of: host).flatMap { isZygote($0) ? childProcesses(of: $0) : [$0] }
}

/// Every process the host started and that still runs: its workers, and
/// its zygote.
func hostProcesses(of host: pid_t) -> [pid_t] {
    childProcesses(of: host).flatMap { isZygote($0) ? [$0] + childProcesses(of: $0) : [$0] }
}

/// Whether `pid` runs (a zombie does not).
func isRunning(_ pid: pid_t) -> Bool {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return false }
    let text = String(decoding: data, as: UTF8.self)
    guard let close = text.lastIndex(of: ")") else { return false }
    return !text[close...].hasPrefix(") Z")
}

func isZygote(_ pid: pid_t) -> Bool {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
    return String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self).contains(" __zygote ")
}

/// Direct children of `parent`, from /proc.
func childProcesses(of parent: pid_t) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { Int32($0) }.filter { pid in
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 2 && Int32(fields[1]) == parent
    }
}

/// Waits until `pid` no longer exists (or is a zombie nobody reaps yet).
/// Polls /proc: there is no event for another process's exit here.
func waitUntilGone(_ pid: pid_t, timeout: Double) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    repeat {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        if let close = stat.lastIndex(of: ")"), stat[stat.index(after: close)...].hasPrefix(" Z") { return true }
        usleep(20_000)
    } while Date() < deadline
    return false
}
