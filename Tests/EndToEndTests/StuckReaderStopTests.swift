import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A stop while every thread the stall watchdog allows is stuck in an
/// in-process handler that never returns. Each such line holds the thread
/// that was reading; the watchdog hands the input to a new thread, up to its
/// cap of 64 stalled threads, and past that the input waits. Before, a
/// SIGTERM then never ended the host: the thread owning the input never
/// looked at the stop (minutes after SIGTERM with `--grace-period 1`; found
/// by the red team with handlers that slept for an hour).
@Suite("Stop with the readers stuck in handlers", .ownThreads)
struct StuckReaderStopTests {
    /// More hanging lines than the watchdog's 64 stalled threads and the
    /// owner: the last ones are never read until the stop.
    static let lineCount = 70
    static let hang = "faulty://x-callback-url/hang"

    @Test("isolation none, readers stuck in handlers past the cap: SIGTERM exits within the grace period",
          .scaledTimeLimit(minutes: 2))
    func stopWithEveryReaderStuck() async throws {
        let fixture = try HostFixture(["Faulty"], isolation: "none")
        // --timeout far off: what ends the hung requests is the stop.
        let child = try fixture.start(["--output", "jsonl", "--grace-period", "1", "--timeout", "600"], stdin: .pipe)
        // The owner and the 64 threads the watchdog relieved it with are all
        // in the handler: the input now waits.
        let lines = try await Self.hangEveryThread(of: child, lines: Self.lineCount)
        let seconds = await Self.stop(child)
        #expect(seconds.map { $0 < 1 + TestTiming.scaled(1) } == true, "exited \(seconds ?? -1) s after SIGTERM")
        // Every line has exactly one record: the hung ones Timeout, the ones
        // never run ShuttingDown.
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == Self.lineCount, "\(records.count) records")
        let unanswered = Set(lines).subtracting(records.compactMap(\.input))
        #expect(unanswered.isEmpty, "no record for \(unanswered.sorted().prefix(5))")
        #expect(records.allSatisfy { $0.errorCode == "Timeout" || $0.errorCode == "ShuttingDown" },
                "\(records.map { $0.errorCode ?? "-" })")
    }

    @Test("isolation process, a worker with every thread stuck in a handler: SIGTERM exits within the grace period plus 1 s",
          .scaledTimeLimit(minutes: 2))
    func stopWithAWorkerStuck() async throws {
        let fixture = try HostFixture(["Faulty"], isolation: "process")
        let child = try fixture.start(["--output", "jsonl", "--grace-period", "0.5", "--timeout", "600"], stdin: .pipe)
        // 66 handlers that never return take every thread the worker has,
        // so it reads nothing more, its shutdown frame included: its hook
        // cannot run, and the host must not wait the 2 s it gives hooks.
        let lines = try await Self.hangEveryThread(of: child, lines: 66)
        let seconds = await Self.stop(child)
        #expect(seconds.map { $0 < 0.5 + 1 + TestTiming.scaled(0.5) } == true, "exited \(seconds ?? -1) s after SIGTERM")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == lines.count && records.allSatisfy { $0.errorCode == "Timeout" },
                "\(records.map { $0.errorCode ?? "-" })")
    }

    /// Writes `count` hanging lines and waits until 65 handlers (Faulty
    /// logs each) hold every reading thread; returns the lines.
    private static func hangEveryThread(of child: ChildProcess, lines count: Int) async throws -> [String] {
        let lines = (0..<count).map { "\(hang)?n=\($0)" }
        #expect(child.write(lines.map { $0 + "\n" }.joined()))
        let stuck = await offCooperativePool {
            child.waitForStderr(timeout: TestTiming.scaled(60)) {
                $0.components(separatedBy: "hang: never returning").count - 1 >= 65
            }
        }
        try #require(stuck, "stderr: \(child.stderr)")
        return lines
    }

    /// SIGTERM, then how many seconds the host took to exit (it must exit 0).
    private static func stop(_ child: ChildProcess) async -> Double? {
        let (_, seconds) = await child.stopAndTimeExit(signal: SIGTERM, timeout: TestTiming.scaled(15))
        let status = await child.awaitExit(timeout: 5)
        #expect(status == .exited(0), "stderr: \(child.stderr.suffix(2000))")
        return seconds
    }
}
