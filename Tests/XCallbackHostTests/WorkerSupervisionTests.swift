import Testing
@testable import XCallbackHost

/// Worker supervision, death by death, on a clock the test moves: restart
/// delays, the crash limit, quarantines and their cool-downs.
@Suite("Worker supervision")
struct WorkerSupervisionTests {
    private static let second: UInt64 = 1_000_000_000
    private let policy = RestartPolicy()  // 5 in 60 s, 100 ms → 5 s, cool-down 30 s → 600 s

    @Test("a worker killed by its request restarts after the initial delay, every time")
    func explainedDeathsRestartAtOnce() {
        var supervision = WorkerSupervision(policy: policy)
        for minute in 0..<20 {
            // One a minute: never more than the limit within the window.
            let decision = supervision.workerDied(at: UInt64(minute) * 61 * Self.second, explained: true)
            #expect(decision == .restart(after: .milliseconds(100)))
        }
    }

    @Test("an idle worker that keeps dying restarts later each time, up to the longest delay")
    func crashLoopBacksOff() {
        var policy = self.policy
        policy.limit = 100
        var supervision = WorkerSupervision(policy: policy)
        let delays = (0..<9).map { supervision.workerDied(at: UInt64($0) * Self.second, explained: false) }
        #expect(delays == [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000].map { .restart(after: .milliseconds($0)) })
        // A death a request explains starts the series again.
        #expect(supervision.workerDied(at: 10 * Self.second, explained: true) == .restart(after: .milliseconds(100)))
        #expect(supervision.workerDied(at: 11 * Self.second, explained: false) == .restart(after: .milliseconds(200)))
    }

    @Test("one death past the limit within the window quarantines; older deaths do not count")
    func limitWithinWindow() {
        var supervision = WorkerSupervision(policy: policy)
        for index in 0..<5 {
            #expect(supervision.workerDied(at: UInt64(index) * Self.second, explained: true) == .restart(after: .milliseconds(100)))
        }
        // 61 s after the first: it has left the window, so this is the fifth.
        #expect(supervision.workerDied(at: 61 * Self.second, explained: true) == .restart(after: .milliseconds(100)))
        // Another in the same second: six within the window.
        #expect(supervision.workerDied(at: 61 * Self.second, explained: true)
            == .quarantine(cooldown: .seconds(30), number: 1, crashes: 6))
    }

    @Test("quarantines in a row double their cool-down, up to the longest; a calm spell or an operator resets it")
    func quarantinesDouble() {
        var supervision = WorkerSupervision(policy: policy)
        var now: UInt64 = 0
        func quarantine() -> WorkerSupervision.Decision {
            var last: WorkerSupervision.Decision = .restart(after: .zero)
            for _ in 0...policy.limit {
                now += Self.second
                last = supervision.workerDied(at: now, explained: true)
            }
            supervision.forgive(byOperator: false)  // the cool-down ended
            return last
        }
        let cooldowns = (1...7).map { _ -> Duration? in
            if case .quarantine(let cooldown, _, _) = quarantine() { return cooldown }
            return nil
        }
        #expect(cooldowns == [30, 60, 120, 240, 480, 600, 600].map { Duration.seconds($0) })
        #expect(supervision.quarantineNumber == 7)

        // Longer than the longest cool-down without one: a new series.
        now += 601 * Self.second
        #expect(quarantine() == .quarantine(cooldown: .seconds(30), number: 8, crashes: 6))
        #expect(quarantine() == .quarantine(cooldown: .seconds(60), number: 9, crashes: 6))
        // SIGHUP forgets the series at once.
        supervision.forgive(byOperator: true)
        #expect(quarantine() == .quarantine(cooldown: .seconds(30), number: 10, crashes: 6))
    }

    @Test("a clock that steps back does not trap or wedge the window")
    func clockOddities() {
        var supervision = WorkerSupervision(policy: policy)
        _ = supervision.workerDied(at: .max, explained: true)
        #expect(supervision.workerDied(at: 0, explained: true) == .restart(after: .milliseconds(100)))
        #expect(supervision.crashTimes.count <= 2)
    }
}
