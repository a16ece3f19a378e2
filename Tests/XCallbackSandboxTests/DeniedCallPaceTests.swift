import Testing

@testable import XCallbackSandbox

/// `DeniedCallPace`, on a clock the test moves: a burst answered at once,
/// then one call a millisecond, whatever the worker tries.
@Suite("Denied-call pace")
struct DeniedCallPaceTests {
    @Test("the burst is answered at once, then each call waits its share of the rate")
    func burstThenRate() {
        var pace = DeniedCallPace(now: 0)
        for _ in 0..<DeniedCallPace.burst { #expect(pace.delay(now: 0) == 0) }
        // A worker that calls again at once waits a call's worth (1 ms).
        let interval = 1_000_000_000 / DeniedCallPace.rate
        var now: UInt64 = 0
        for _ in 0..<10 {
            let wait = pace.delay(now: now)
            #expect(wait == interval)
            now += wait
        }
    }

    @Test("a flood of a second gets the burst and the rate, not more")
    func floodIsBounded() {
        var pace = DeniedCallPace(now: 0)
        var now: UInt64 = 0
        var answered: UInt64 = 0
        // The worker calls again 1 µs after each answer, for one second.
        while now < 1_000_000_000 {
            now += pace.delay(now: now) + 1_000
            answered += 1
        }
        #expect(answered <= DeniedCallPace.burst + DeniedCallPace.rate + 1)
        #expect(answered >= DeniedCallPace.burst + DeniedCallPace.rate - 2)
    }

    @Test("a quiet worker's tokens come back, up to the burst")
    func refills() {
        var pace = DeniedCallPace(now: 0)
        for _ in 0..<DeniedCallPace.burst { _ = pace.delay(now: 0) }
        // Ten seconds later: a full burst again, and no more.
        let later: UInt64 = 10_000_000_000
        for _ in 0..<DeniedCallPace.burst { #expect(pace.delay(now: later) == 0) }
        #expect(pace.delay(now: later) > 0)
    }
}
