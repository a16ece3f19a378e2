#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How fast one worker's denied system calls are answered: `rate` a
/// second, after a burst of `burst`. Each answer costs the host a wake-up
/// and two ioctls; a plug-in that retries a refused call in a loop would
/// otherwise make the host spend as much as it spends itself (a fifth of a
/// core at 33,000 calls a second). Past the rate its next call waits in the
/// kernel for its answer: the worker is slowed, not served, and the flood
/// costs the host a bounded share of a core. A call is answered, never
/// dropped: the kernel holds the caller until it is.
struct DeniedCallPace {
    /// Calls a second, sustained.
    static let rate: UInt64 = 1000
    /// Calls at once, before the rate holds.
    static let burst: UInt64 = 1000

    private static let oneCall: UInt64 = 1_000_000_000
    /// Kept in nanoseconds-of-a-call, so no rounding is lost.
    private var tokens = Self.burst * Self.oneCall
    private var updated: UInt64

    init(now: UInt64) { updated = now }

    /// How long (ns) the call seen at `now` must wait before its answer;
    /// its token is taken.
    mutating func delay(now: UInt64) -> UInt64 {
        // Never negative: after a wait, `updated` is when it ends.
        let elapsed = now > updated ? now - updated : 0
        updated = max(updated, now)
        let (gained, overflow) = elapsed.multipliedReportingOverflow(by: Self.rate)
        let full = Self.burst * Self.oneCall
        tokens = overflow ? full : min(full, tokens &+ min(gained, full))
        guard tokens < Self.oneCall else {
            tokens -= Self.oneCall
            return 0
        }
        // The wait until one token has come; it is spent by this call.
        let wait = (Self.oneCall - tokens + Self.rate - 1) / Self.rate
        tokens = 0
        updated += wait
        return updated - now
    }

    /// The monotonic clock, in nanoseconds.
    static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Sleeps `nanoseconds`, whatever signals interrupt it.
    static func sleep(_ nanoseconds: UInt64) {
        var asked = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var left = timespec()
        while nanosleep(&asked, &left) != 0 && errno == EINTR { asked = left }
    }
}
