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
/// the two cost the same. The state and its mutex share one allocation: a
/// lock is made for every request in flight on the general path
/// (`PendingRequest`, `HandlerCall`).
public struct Lock<State>: @unchecked Sendable {
    // @unchecked: the state is only touched with the mutex held.
    // Inlinable, for the request path locks across modules: unspecialized,
    // every call copied its state through value witnesses.
    @usableFromInline
    final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    @usableFromInline
    let storage: Storage

    public init(_ state: State) {
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in state }, to: Storage.self)
        _ = storage.withUnsafeMutablePointerToElements { pthread_mutex_init($0, nil) }
    }

    /// Runs `body` with the lock held.
    @inlinable
    public func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // Both pointers stay valid while `storage` lives, which this call
        // guarantees: it holds `self`.
        let (state, mutex) = storage.withUnsafeMutablePointers { ($0, $1) }
        pthread_mutex_lock(mutex)
        defer {
            pthread_mutex_unlock(mutex)
            withExtendedLifetime(storage) {}
        }
        return try body(&state.pointee)
    }
}
