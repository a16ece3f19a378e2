import Synchronization
import XCallbackSystem

/// Which requests the host times on the fine monotonic clock, for the
/// latency histogram (`run --metrics`). Every request is stamped with the
/// coarse clock, whose stamps are its deadline; reading the fine clock costs
/// about 75 ns against 20 ns, twice a request, some 8 % of an in-process
/// request at full speed. So a sampler gives a fine start to:
///
/// - the first request to begin in each tick of the coarse clock (1–4 ms):
///   a slow stream has all its requests timed, a fast one some 250 a second
///   (at `HZ=250`), whatever its rate;
/// - every request while the last one it timed took `everyOneFrom` or more:
///   two fine reads are then under 1 % of a request.
///
/// Neither rule looks at the request it decides on, only at when it began
/// and at the one timed before it, so the sample is not skewed towards slow
/// or fast requests of the plug-in. One sampler per place requests begin
/// from: each input stream's lane (its thread), each worker's lane, and
/// the general path's starts. Atomics, all relaxed: the ends that report
/// back run on other threads (a worker's reply thread).
final class LatencySampler: Sendable {
    /// A timed request this long keeps every next one timed.
    static let everyOneFrom: UInt64 = 20_000

    /// The tick of the last sampled start.
    private let tick = Atomic<UInt64>(0)
    /// The last timed request took `everyOneFrom` or more.
    private let everyOne = Atomic<Bool>(false)

    /// The fine start of a request that begins at `tick` (the coarse clock,
    /// or any clock in steps of a few ms), or 0 when it is not timed.
    @inline(__always)
    func fineStart(tick now: UInt64) -> UInt64 {
        samples(tick: now) ? MonotonicClock.now : 0
    }

    /// Whether a request that begins at `tick` is timed.
    @inline(__always)
    func samples(tick now: UInt64) -> Bool {
        if everyOne.load(ordering: .relaxed) { return true }
        let last = tick.load(ordering: .relaxed)
        // One winner per tick where several threads start requests.
        return last != now && tick.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
    }

    /// A timed request took `nanoseconds`.
    func measured(_ nanoseconds: UInt64) {
        let long = nanoseconds >= Self.everyOneFrom
        // Written only on a change: its readers' cache line stays theirs.
        if everyOne.load(ordering: .relaxed) != long { everyOne.store(long, ordering: .relaxed) }
    }
}
