import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A request that starts after a stop's grace period has ended what was in
/// flight. The stop's `Timeout` of a request whose `x-error` goes to one of
/// the host's own routes is followed as the next hop of its chain: that hop
/// started after the in-flight table had been emptied, so it waited for its
/// own `--timeout` (the host exited 20 s after SIGTERM with
/// `--grace-period 1 --timeout 20`). Found by the red team with chains whose
/// answers came as the grace period ended, which race the same way.
@Suite("Stop: a chain's next hop after the grace period", .ownThreads)
struct StopChainTests {
    /// Never completes, and neither does the hop its Timeout leads to.
    static let line = "faulty://x-callback-url/never?x-error=" + percentEncoded("faulty://x-callback-url/never?hop=2")

    @Test("a Timeout at the stop chains into a hung hop: exit within the grace period, one record",
          .scaledTimeLimit(minutes: 1), arguments: ["process", "none"])
    func chainAfterTheGracePeriod(isolation: String) async throws {
        let fixture = try HostFixture(["Faulty"], isolation: isolation)
        let child = try fixture.start(["--output", "jsonl", "--grace-period", "1", "--timeout", "600",
                                       "--log-level", "info"], stdin: .pipe)
        #expect(child.write(Self.line + "\n"))
        // Faulty logs when its handler returns without completing: the
        // request is in flight.
        let inFlight = await offCooperativePool {
            child.waitForStderr(containing: "never: returning without completing", timeout: TestTiming.scaled(30))
        }
        try #require(inFlight, "stderr: \(child.stderr)")
        let (_, seconds) = await child.stopAndTimeExit(signal: SIGTERM, timeout: TestTiming.scaled(15))
        let status = await child.awaitExit(timeout: 5)
        #expect(status == .exited(0), "stderr: \(child.stderr.suffix(2000))")
        #expect(seconds.map { $0 < 1 + TestTiming.scaled(1) } == true, "exited \(seconds ?? -1) s after SIGTERM")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == 1, "\(records)")
        #expect(records.first?.errorCode == "Timeout", "\(records)")
        #expect(records.first?.params["errorMessage"]?.contains("grace period") == true, "\(records)")
    }
}
