import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A stop that arrives while `run` starts (issue 28). SIGTERM and SIGINT are
/// taken by the host's signal thread once it starts, and blocked until then;
/// they used to be blocked only once `run` itself began, after the Swift
/// runtime, the libraries and argument parsing (tens of milliseconds), so a
/// service manager's stop just after a start killed a host that had read
/// lines and answered none. Now they are blocked before any library's
/// constructor (CHostSupport's early_signals.c), and only for `run`: the
/// host's children must not inherit that mask.
@Suite("A stop during start-up", .ownThreads)
struct EarlyStopTests {
    private static let lines = (1...3).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1" }
    private static let hostSignals = [SIGINT, SIGTERM, SIGHUP, SIGUSR1]

    /// The mask of signals `field` (`SigBlk`, `SigCgt`) shows for `pid`'s
    /// main thread; nil once the process is gone.
    private static func signalField(_ field: String, of pid: pid_t) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16)
        }
        return nil
    }

    private static func bit(_ signal: Int32) -> UInt64 { 1 << UInt64(signal - 1) }

    /// Waits until the dynamic loader is done with `pid`: the Swift
    /// runtime's constructor has installed its crash handler (SIGSEGV
    /// caught). Before that no program can guard itself (the loader maps and
    /// relocates two dozen libraries); from there on, `main` and start-up
    /// follow. Polls /proc: a signal mask changes with no event.
    private static func waitForRuntime(_ pid: pid_t, timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(timeout))
        while Date() < deadline {
            guard let caught = signalField("SigCgt", of: pid) else { return true }
            if caught & bit(SIGSEGV) != 0 { return true }
            usleep(50)
        }
        return false
    }

    @Test("SIGTERM as start-up begins, 20 times: exit 0, one record at most for each line sent, never death by the signal",
          .scaledTimeLimit(minutes: 2))
    func sigtermDuringStartUp() throws {
        let host = try HostFixture(["Calculator"])
        var answered = 0
        for round in 0..<20 {
            let child = try ChildProcess(host.runPrefix + ["--output", "jsonl", "--no-summary"], stdin: .pipe)
            child.write(Self.lines.map { $0 + "\n" }.joined())
            try #require(Self.waitForRuntime(child.pid, timeout: 10), "round \(round): the runtime never started")
            // Spread over start-up: at once, then up to 20 ms into it (the
            // host needed 40 ms or more to block the signals before).
            if round % 5 != 0 { usleep(useconds_t(round % 5) * 5_000) }
            child.send(signal: SIGTERM)
            let status = child.waitForExit(timeout: 15)
            // stdin stays open: only the stop ends this host.
            #expect(status == .exited(0), "round \(round): stderr: \(child.stderr)")
            let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
            let inputs = records.compactMap(\.input)
            #expect(inputs.count == records.count && Set(inputs).count == inputs.count
                        && Set(inputs).isSubset(of: Self.lines), "round \(round): \(records)")
            #expect(records.allSatisfy { $0.outcome == "success" || $0.errorCode == "ShuttingDown" },
                    "round \(round): \(records)")
            if records.count == Self.lines.count { answered += 1 }
            child.closeInput()
        }
        // Lines still in the pipe at the stop are answered ShuttingDown, so
        // every round answers all three.
        #expect(answered == 20)
    }

    @Test("the host's children start with none of its signals blocked", .scaledTimeLimit(minutes: 1))
    func childrenStartUnblocked() throws {
        let host = try HostFixture(["Calculator"], isolation: "process")
        let child = try host.start(["--no-summary"])
        defer {
            child.send(signal: SIGTERM)
            child.waitForExit(timeout: 15)
        }
        child.write(Self.lines[0] + "\n")
        try #require(child.waitForStdoutLines(1, timeout: 20), "stderr: \(child.stderr)")
        let blockedInHost = try #require(Self.signalField("SigBlk", of: child.pid))
        let mask = Self.hostSignals.reduce(0) { $0 | Self.bit($1) }
        #expect(blockedInHost & mask == mask)
        // The zygote and, under it, the worker that answered.
        var descendants = childProcesses(of: child.pid)
        descendants += descendants.flatMap { childProcesses(of: $0) }
        #expect(descendants.count >= 2, "the host's descendants: \(descendants)")
        for pid in descendants {
            guard let blocked = Self.signalField("SigBlk", of: pid) else { continue }
            #expect(blocked & mask == 0, "process \(pid) starts with SigBlk \(String(blocked, radix: 16))")
        }
    }
}
