#if Queue  // the package's Queue trait: swift build --traits Queue
import Testing
@testable import XCallbackQueue

@Suite("FailureStreak")
struct FailureStreakTests {
    @Test("a failure every 50 ms for ten minutes is reported 6 times: at once, then after 10, 20, 40 … s, with the count")
    func reportsAtASlowingRate() {
        var streak = FailureStreak()
        let start = ContinuousClock.now
        var reports: [(at: Duration, report: FailureStreak.Report)] = []
        var time = Duration.zero
        while time <= .seconds(600) {
            let report = streak.failed(at: start + time)
            if report != .quiet { reports.append((time, report)) }
            time += .milliseconds(50)
        }
        #expect(reports.first?.report == .first)
        #expect(reports.map(\.at) == [.zero, .seconds(10), .seconds(30), .seconds(70), .seconds(150), .seconds(310)],
                "\(reports)")
        if case .repeated(let count, let duration) = reports[1].report {
            #expect(count == 201)
            #expect(duration == .seconds(10))
        } else {
            Issue.record("the second report is not a count: \(reports[1])")
        }
    }

    @Test("the back-off doubles from 50 ms to a 5 s ceiling, less at most a fifth")
    func backOffGrowsToACeiling() {
        var streak = FailureStreak()
        #expect(streak.delay == .zero)
        var delays: [Duration] = []
        for _ in 0..<20 {
            _ = streak.failed()
            delays.append(streak.delay)
        }
        #expect(delays[0] >= .milliseconds(40) && delays[0] <= .milliseconds(50))
        #expect(delays[3] >= .milliseconds(320) && delays[3] <= .milliseconds(400))
        #expect(delays.suffix(10).allSatisfy { $0 >= .seconds(4) && $0 <= .seconds(5) }, "\(delays)")
    }

    @Test("only a success ends a streak, and says how many failed and for how long; the next failure is a first again")
    func successEndsAStreak() {
        var streak = FailureStreak()
        #expect(streak.succeeded() == nil)
        let start = ContinuousClock.now
        for step in 0..<5 { _ = streak.failed(at: start + .seconds(step)) }
        let ended = streak.succeeded(at: start + .seconds(6))
        #expect(ended?.count == 5)
        #expect(ended?.duration == .seconds(6))
        #expect(streak.delay == .zero)
        #expect(streak.failed(at: start + .seconds(7)) == .first)
    }
}
#endif
