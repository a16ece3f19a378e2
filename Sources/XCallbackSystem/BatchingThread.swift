#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Something holding bytes back for one write.
public protocol Flushable: AnyObject, Sendable {
    func flush()
}

/// Marks the threads that read input. Bytes produced on such a thread
/// (records, frames to a worker, results from a worker) are written when
/// the thread has consumed all the input it has, just before it blocks for
/// more: a burst of requests costs one write, not one each, and nothing is
/// held back waiting for input. Bytes produced on any other thread are
/// written at once.
public enum BatchingThread {
    /// Per-thread list of writers with bytes pending.
    private final class Pending {
        // Only its own thread touches it (it is thread-local), so the
        // runtime's exclusivity check, a dearer lookup than the list's own
        // work for every record, is off.
        @exclusivity(unchecked) var writers: [Flushable] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            if let raw { Unmanaged<Pending>.fromOpaque(raw).release() }
        }
        return key
    }()

    public static var isCurrent: Bool {
        pthread_getspecific(key) != nil
    }

    public static func markCurrent() {
        guard !isCurrent else { return }
        pthread_setspecific(key, Unmanaged.passRetained(Pending()).toOpaque())
    }

    /// Remembers `writer` to flush before this thread blocks. Only on a
    /// batching thread; returns false elsewhere (the caller writes now).
    public static func deferFlush(_ writer: Flushable) -> Bool {
        guard let raw = pthread_getspecific(key) else { return false }
        Unmanaged<Pending>.fromOpaque(raw)._withUnsafeGuaranteedRef { pending in
            if !pending.writers.contains(where: { $0 === writer }) {
                pending.writers.append(writer)
            }
        }
        return true
    }

    /// Flushes everything this thread deferred. Call before blocking.
    public static func flushDeferred() {
        guard let raw = pthread_getspecific(key) else { return }
        let pending = Unmanaged<Pending>.fromOpaque(raw).takeUnretainedValue()
        while let writer = pending.writers.popLast() {
            writer.flush()
        }
    }
}
