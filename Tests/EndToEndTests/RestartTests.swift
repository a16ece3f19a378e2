import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How crashed workers come back (docs/routing-and-isolation.md, "Isolation"), pinned where the
/// chaos test (ChaosTests.swift) found the host wrong: a back-off that grew
/// with every crash (so bigger batches of waiting requests died with the
/// next one), requests run after they had timed out waiting for a worker,
/// and a restart that outlived a replacement (its worker leaked, and the
/// requests waiting for it got PluginUnavailable).
@Suite("Worker restarts", .ownThreads, .serialized)
struct RestartTests {
    static let crash = "faulty://x-callback-url/crash"

    @Test("a worker killed by a request comes back after the initial delay, crash after crash", .scaledTimeLimit(minutes: 1))
    func requestCrashesDoNotGrowTheBackOff() throws {
        let session = try IsolationTests.Session(["Faulty"], arguments: ["--timeout", "1", "--restart-limit", "1000"])
        // A back-off doubling with every crash would make the sixth restart
        // wait 3.2 s, and the request waiting for it Timeout.
        for _ in 1...6 { #expect(try session.ask(Self.crash).errorCode == "PluginCrashed") }
        let after = try session.ask("faulty://x-callback-url/fail")
        #expect(after.errorCode == "Failed", "\(after)")
        try session.finish()
    }

    @Test("a request that timed out waiting for a worker is never run", .scaledTimeLimit(minutes: 1))
    func timedOutWhileWaitingIsNotRun() throws {
        let session = try IsolationTests.Session(["Faulty"], arguments: ["--timeout", "1", "--restart-limit", "1000", "--log-level", "info"])
        try Self.makeACrashLoop(host: session.host)
        #expect(try session.ask("faulty://x-callback-url/noise").errorCode == "Timeout")
        // The worker comes back and answers what arrived after the Timeout...
        #expect(try session.ask("faulty://x-callback-url/fail", timeout: 10).errorCode == "Failed")
        // ...but not the request already answered: it would print its noise.
        #expect(!session.host.waitForStderr(containing: "noise on stderr", timeout: 1),
                "a request answered Timeout ran later anyway")
        try session.finish()
    }

    @Test("a plug-in replaced while its worker waits to restart: the waiting request is answered, no worker is left over",
          .scaledTimeLimit(minutes: 1))
    func replacedDuringARestart() throws {
        let session = try DropInTests.FIFOHost(arguments: ["--log-level", "info"])
        try session.install("Faulty", as: "faulty.so")
        #expect(try session.askUntil("faulty://x-callback-url/fail", seconds: 5) { $0.errorCode == "Failed" }.errorCode == "Failed")
        try Self.makeACrashLoop(host: session.host)
        session.send("faulty://x-callback-url/sleep?ms=1")
        // Replaced (and the old version retired) while that restart is pending.
        try session.install("Faulty", as: "faulty.so")
        try #require(session.host.waitForStdoutLines(session.sentCount, timeout: 10), "stderr: \(session.host.stderr)")
        let waited = try Record(jsonLine: session.host.stdoutLines[session.sentCount - 1])
        #expect(waited.params["slept"] == "1", "the request accepted before the replacement: \(waited)")
        // The old version's restarted worker answered it, then stopped.
        let live = waitForLiveProcesses(withCommandLineContaining: ["__worker", session.fixture.plugins], timeout: 5) { $0.count == 1 }
        #expect(live.count == 1, "live workers: \(live)")
        #expect(try session.ask("faulty://x-callback-url/fail").errorCode == "Failed")
        session.stop()
    }

    /// Kills the plug-in's idle worker five times in a row, each time as
    /// soon as its successor is ready: a crash loop, so the next restart
    /// waits 1.6 s (100 ms doubled four times). Returns once the host has
    /// scheduled that restart. The host must log at `info`: it names each
    /// worker it loads or restarts ("in worker PID") once it is ready.
    static func makeACrashLoop(host: ChildProcess) throws {
        for round in 1...5 {
            guard host.waitForStderr(until: { readyWorkers($0).count >= round }) else {
                throw HarnessError("worker \(round) never became ready; stderr: \(host.stderr)")
            }
            kill(readyWorkers(host.stderr)[round - 1], SIGKILL)
        }
        guard host.waitForStderr(containing: "restarting in 1.6", timeout: 10) else {
            throw HarnessError("the host did not back off to 1.6 s; stderr: \(host.stderr)")
        }
    }

    /// The workers a host's log reports ready, in order.
    static func readyWorkers(_ log: String) -> [pid_t] {
        log.split(separator: "\n").compactMap { line -> pid_t? in
            guard let range = line.range(of: " in worker ") else { return nil }
            return pid_t(line[range.upperBound...].prefix(while: \.isNumber))
        }
    }
}

/// A quarantine ends by itself (docs/routing-and-isolation.md, "Isolation"): before, six crashes
/// from any client disabled a plug-in for everyone until an operator sent
/// SIGHUP or touched its file.
@Suite("Quarantine", .ownThreads, .serialized)
struct QuarantineTests {
    @Test("a plug-in past the restart limit comes back after its cool-down, which doubles the next time",
          .scaledTimeLimit(minutes: 1))
    func quarantineEndsByItself() throws {
        let session = try IsolationTests.Session(["Faulty"], arguments: [
            "--restart-limit", "1", "--quarantine", "1", "--timeout", "30", "--log-level", "info"])
        for round in 1...2 {
            #expect(try session.ask(RestartTests.crash).errorCode == "PluginCrashed")
            #expect(try session.ask(RestartTests.crash).errorCode == "PluginCrashed")
            let refused = try session.ask("faulty://x-callback-url/fail")
            #expect(refused.errorCode == "PluginUnavailable", "\(refused)")
            #expect(refused.params["errorMessage"]?.contains("disabled for \(round) s") == true, "\(refused)")
            // Back once the cool-down is over, with no SIGHUP.
            try #require(session.host.waitForStderr(timeout: TestTiming.scaled(10)) {
                $0.components(separatedBy: "quarantine over").count - 1 == round
            }, "stderr: \(session.host.stderr)")
            let answered = try session.ask("faulty://x-callback-url/fail", timeout: 30)
            #expect(answered.errorCode == "Failed", "\(answered); stderr: \(session.host.stderr)")
        }
        try session.finish()
    }
}
