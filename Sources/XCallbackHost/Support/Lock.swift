#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutual-exclusion lock around a value, on a pthread mutex.
///
/// Why not `Synchronization.Mutex`: on Linux its contended path parks in
/// the kernel through a futex that ThreadSanitizer cannot see, so every
/// state it guards shows up as a data race under `.ci/sanitize thread`,
/// hiding real ones. ThreadSanitizer intercepts pthread mutexes. Uncontended,
/// the two cost the same; this one allocates its mutex once, at creation.
package final class Lock<State>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    // Guarded by `mutex`; @unchecked Sendable rests on that. The mutex
    // already makes every access exclusive, so the runtime's own check
    // (a thread-local lookup per access) is turned off.
    @exclusivity(unchecked) private var state: State

    package init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    package func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
