#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutex with a condition variable, for the few places that must sleep
/// until another thread changes shared state (bounded queues, the deadline
/// timer). `Synchronization.Mutex` has no condition variable, hence pthreads.
public final class ConditionLock<State>: @unchecked Sendable {
    // Inlinable where the request path takes it, as `Lock` is.
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`; @unchecked Sendable rests on that (and the
    // runtime's exclusivity check is off for it, as in `Lock`).
    @usableFromInline @exclusivity(unchecked) var state: State

    public init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Timed waits measure the monotonic clock, immune to wall-clock jumps.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    @inlinable
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Waits until `isReady` holds, then runs `body`, all under the lock.
    /// With a deadline (monotonic nanoseconds), gives up when it passes and
    /// runs `body` anyway; `body` must check the state itself.
    public func wait<R>(
        until isReady: (State) -> Bool,
        deadline: UInt64? = nil,
        then body: (inout State) throws -> R
    ) rethrows -> R {
        try wait(until: isReady, deadline: deadline, beforeSleeping: { _ in }, then: body)
    }

    /// As `wait(until:deadline:then:)`, and `beforeSleeping` runs on the
    /// state each time the caller is about to sleep: a waiter can leave word
    /// of what it waits for, so the other side wakes it only then.
    public func wait<R>(
        until isReady: (State) -> Bool,
        deadline: UInt64? = nil,
        beforeSleeping: (inout State) -> Void,
        then body: (inout State) throws -> R
    ) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !isReady(state) {
            beforeSleeping(&state)
            if let deadline {
                if MonotonicClock.now >= deadline { break }
                var time = timespec(
                    tv_sec: Int(deadline / 1_000_000_000),
                    tv_nsec: Int(deadline % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &time)
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
        return try body(&state)
    }

    /// Wakes every waiter; call after changing the state they wait on.
    public func broadcast() {
        pthread_cond_broadcast(condition)
    }
}

extension Duration {
    /// Whole nanoseconds (negative durations count as zero), for deadlines
    /// on the monotonic clock.
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
    }
}

/// Monotonic time in nanoseconds, the clock of every deadline in the host.
public enum MonotonicClock {
    public static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// The same clock as of its last tick (a few ms behind at most), at a
    /// fraction of the cost: for per-request stamps compared against
    /// thresholds of 50 ms and more.
    public static var coarseNow: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
