import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every descriptor the host opens for a worker is closed once the worker
/// is gone (docs/reliability.md, "One bad neighbour"). Before, each worker
/// that ended kept its pidfd open in the host for good: 60 requests to
/// `faulty://…/hang` with `--timeout 0.3` left 20 more descriptors, and
/// under `ulimit -n 70` a plug-in added afterwards could not start.
///
/// The counts are `XCALLBACK_TEST_WORKER_DEATHS` (crashes and exits,
/// default 300) and `XCALLBACK_TEST_HUNG_WORKERS` (hung workers replaced,
/// default 20; each takes `--timeout` plus the second a handler is given
/// past it, about 1.3 s). Both pass at 1,000 (docs/reliability.md).
@Suite("Worker descriptors", .ownThreads)
struct WorkerDescriptorTests {
    static func count(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init).map { max($0, 1) } ?? value
    }

    static func openDescriptors(of pid: pid_t) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
    }

    /// A host reading stdin, with Faulty only, restarting without limit.
    final class Session: @unchecked Sendable {
        let fixture: HostFixture
        let host: ChildProcess
        private(set) var sent = 0

        init(timeout: String) throws {
            fixture = try HostFixture(["Faulty"], isolation: "process")
            host = try fixture.start(["--output", "jsonl", "--timeout", timeout, "--restart-limit", "1000000"],
                                     stdin: .pipe)
        }

        func send(_ line: String) {
            #expect(host.write(line + "\n"))
            sent += 1
        }

        /// Sends `line` and waits for its record.
        func ask(_ line: String, timeout: Double = 10) throws -> Record {
            send(line)
            try #require(host.waitForStdoutLines(sent, timeout: TestTiming.scaled(timeout)),
                         "no record for \(line); stderr: \(host.stderr.suffix(2000))")
            return try Record(jsonLine: host.stdoutLines[sent - 1])
        }

        /// Asks until the worker answers (it has started): with a short
        /// `--timeout`, a request can time out while its worker starts.
        func waitForWorker() throws {
            let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(10))
            var record = try ask("faulty://x-callback-url/fail")
            while record.errorCode != "Failed" && Date() < deadline { record = try ask("faulty://x-callback-url/fail") }
            #expect(record.errorCode == "Failed", "no worker answered: \(record)")
        }

        /// Waits until the host holds at most `limit` descriptors (a dead
        /// worker's output pipes close when the relay reads their end).
        func waitForDescriptors(atMost limit: Int) -> Int {
            let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(10))
            var now = openDescriptors(of: host.pid)
            while now > limit && Date() < deadline {
                usleep(50_000)
                now = openDescriptors(of: host.pid)
            }
            return now
        }

        /// A plug-in dropped in now loads and answers (SIGHUP: a host on
        /// stdin does not watch its directories).
        func addCalculatorAndAsk() throws {
            let temporary = fixture.plugins + "/.calc.so.tmp"
            try FileManager.default.copyItem(atPath: Products.plugin("Calculator"), toPath: temporary)
            chmod(temporary, 0o755)
            #expect(rename(temporary, fixture.plugins + "/calc.so") == 0)
            host.send(signal: SIGHUP)
            let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(10))
            var record = try ask("calc://x-callback-url/add?lhs=1&rhs=2")
            while record.outcome != "success" && Date() < deadline {
                usleep(100_000)
                record = try ask("calc://x-callback-url/add?lhs=1&rhs=2")
            }
            #expect(record.params["result"] == "3", "a plug-in added afterwards: \(record); stderr: \(host.stderr.suffix(2000))")
        }

        func finish() {
            host.closeInput()
            #expect(host.waitForExit(timeout: TestTiming.scaled(20)) == .exited(0), "stderr: \(host.stderr.suffix(2000))")
        }
    }

    static func descriptors(of session: Session) -> String {
        let path = "/proc/\(session.host.pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        let targets = names.map { (try? FileManager.default.destinationOfSymbolicLink(atPath: path + "/" + $0)) ?? "?" }
        return Dictionary(grouping: targets) { $0.filter { !$0.isNumber } }.map { "\($0.key) ×\($0.value.count)" }
            .sorted().joined(separator: ", ")
    }

    @Test("crashes and exits of 300 workers (XCALLBACK_TEST_WORKER_DEATHS) leave the host's descriptors where they were",
          .scaledTimeLimit(minutes: 10))
    func crashesAndExits() throws {
        let deaths = Self.count("XCALLBACK_TEST_WORKER_DEATHS", default: 300)
        // Requests wait for the next worker while one restarts (0.1 s).
        let session = try Session(timeout: "600")
        #expect(try session.ask("faulty://x-callback-url/fail").errorCode == "Failed")
        let before = Self.openDescriptors(of: session.host.pid)
        let layout = Self.descriptors(of: session)
        // All at once: each worker begins one and dies of it; those it never
        // began go to the next worker, so every request is one death.
        let first = session.sent
        for index in 0..<deaths {
            session.send(index % 2 == 0 ? "faulty://x-callback-url/crash" : "faulty://x-callback-url/exit")
        }
        try #require(session.host.waitForStdoutLines(first + deaths, timeout: TestTiming.scaled(Double(deaths))),
                     "records: \(session.host.stdoutLines.count - first) of \(deaths)")
        let records = try session.host.stdoutLines[first..<(first + deaths)].map { try Record(jsonLine: $0) }
        #expect(records.allSatisfy { $0.errorCode == "PluginCrashed" },
                "\(records.filter { $0.errorCode != "PluginCrashed" }.prefix(3))")
        let after = session.waitForDescriptors(atMost: before + 2)
        #expect(after <= before + 2, """
            descriptors: \(before) before \(deaths) worker deaths, \(after) after
            before: \(layout)
            after: \(Self.descriptors(of: session))
            """)
        try session.addCalculatorAndAsk()
        session.finish()
    }

    @Test("20 hung workers replaced (XCALLBACK_TEST_HUNG_WORKERS) leave the host's descriptors where they were",
          .scaledTimeLimit(minutes: 10))
    func hungReplacements() throws {
        let hangs = Self.count("XCALLBACK_TEST_HUNG_WORKERS", default: 20)
        let session = try Session(timeout: "0.1")
        try session.waitForWorker()
        let before = Self.openDescriptors(of: session.host.pid)
        let layout = Self.descriptors(of: session)
        let replaced = "hung past its deadline; replacing its worker"
        for round in 1...hangs {
            // The next worker first: a hang sent while it starts would time
            // out waiting for it, and hang nothing.
            try session.waitForWorker()
            #expect(try session.ask("faulty://x-callback-url/hang").errorCode == "Timeout")
            // Sent only once the last one was replaced: one sent meanwhile
            // would wait behind the hung handler, and time out with it.
            try #require(session.host.waitForStderr(timeout: TestTiming.scaled(10)) {
                $0.components(separatedBy: replaced).count - 1 >= round
            }, "replacement \(round) not seen; stderr: \(session.host.stderr.suffix(2000))")
        }
        // The last replacement answers, so the last hung worker is gone too.
        try session.waitForWorker()
        let after = session.waitForDescriptors(atMost: before + 2)
        #expect(after <= before + 2, """
            descriptors: \(before) before \(hangs) hung workers, \(after) after
            before: \(layout)
            after: \(Self.descriptors(of: session))
            """)
        try session.addCalculatorAndAsk()
        session.finish()
    }
}
