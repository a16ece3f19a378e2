import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's writes to one worker's socket, which never make the caller
/// wait for the worker.
///
/// Frames are batched as `BufferedWriter` batches them (one write per burst,
/// `BatchingThread`), but each write is tried without blocking. What the
/// socket does not take is left to a thread of its own (the flusher), which
/// waits for the worker to read it. While it waits, the writer is busy:
/// `turnAwayIfBusy` tells a sender to keep its request elsewhere (the
/// endpoint's waiting line) instead of queueing behind the write, and
/// `onResumed` says when to send it. A worker that stops reading its socket
/// then holds up its own requests only: before, the input thread that
/// wrote to it waited with it, and with it every plug-in's requests.
final class WorkerRequestWriter: Flushable, @unchecked Sendable {
    // @unchecked: `buffer` and `closed` are guarded by `lock`.
    private let descriptor: Int32
    private let lock = Lock(())
    private var buffer: [UInt8] = []
    private var closed = false
    /// A flusher is writing what the socket did not take.
    private let flushing = Atomic<Bool>(false)
    /// A sender was turned away while the flusher wrote.
    private let turnedAway = Atomic<Bool>(false)
    /// When the flusher's write began (monotonic ns; 0: none).
    private let writingSince = Atomic<UInt64>(0)
    private let onClosed: @Sendable () -> Void
    private let onResumed: @Sendable () -> Void

    /// `onClosed` runs once, when a write finds the worker gone; `onResumed`
    /// after the flusher wrote everything, if a sender was turned away.
    init(descriptor: Int32, onClosed: @escaping @Sendable () -> Void = {},
         onResumed: @escaping @Sendable () -> Void = {}) {
        self.descriptor = descriptor
        self.onClosed = onClosed
        self.onResumed = onResumed
    }

    /// Adds bytes; `fill` appends them under the writer's lock, so frames
    /// keep the order of `append`. Never waits for the worker.
    func append(_ fill: (inout [UInt8]) -> Void) {
        let deferred = BatchingThread.isCurrent
        let outcome = lock.withLock { _ -> Outcome in
            guard !closed else { return .written }
            fill(&buffer)
            return !deferred || buffer.count >= BufferedWriter.threshold ? writeWithoutWaiting() : .written
        }
        report(outcome)
        if deferred { _ = BatchingThread.deferFlush(self) }
    }

    func flush() {
        report(lock.withLock { _ in writeWithoutWaiting() })
    }

    /// True while the flusher waits for the worker to read: the caller
    /// should keep its request and send it once `onResumed` runs (which it
    /// will: either the flusher sees this turn-away, or this sees the
    /// flusher done and answers false).
    func turnAwayIfBusy() -> Bool {
        guard flushing.load(ordering: .sequentiallyConsistent) else { return false }
        turnedAway.store(true, ordering: .sequentiallyConsistent)
        return flushing.load(ordering: .sequentiallyConsistent)
    }

    /// Whether the flusher has waited for the worker longer than `limit` ns.
    func isStuck(longerThan limit: UInt64) -> Bool {
        let since = writingSince.load(ordering: .relaxed)
        return since != 0 && MonotonicClock.now &- since > limit
    }

    private enum Outcome {
        case written
        case closed
    }

    private func report(_ outcome: Outcome) {
        if case .closed = outcome { onClosed() }
    }

    /// Writes what the socket takes now; hands the rest to a flusher.
    /// Called with the lock held.
    private func writeWithoutWaiting() -> Outcome {
        guard !buffer.isEmpty, !closed, !flushing.load(ordering: .relaxed) else { return .written }
        var offset = 0
        while offset < buffer.count {
            let sent = buffer.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            if sent < 0 && errno == EINTR { continue }
            if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            closed = true
            buffer.removeAll()
            return .closed
        }
        buffer.removeFirst(offset)
        if buffer.isEmpty {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 4 * BufferedWriter.threshold)
            return .written
        }
        flushing.store(true, ordering: .sequentiallyConsistent)
        Threads.detach { [self] in flushUntilEmpty() }
        return .written
    }

    /// The flusher: writes the buffer, waiting for the worker, until it is
    /// empty; what senders append meanwhile goes out after it, in order.
    private func flushUntilEmpty() {
        while true {
            // The next batch, or done: decided under the lock, where appends
            // happen, so nothing appended is left behind.
            let pending: [UInt8]? = lock.withLock { _ in
                guard !closed, !buffer.isEmpty else {
                    flushing.store(false, ordering: .sequentiallyConsistent)
                    return nil
                }
                defer { buffer = [] }
                return buffer
            }
            guard let pending else { break }
            writingSince.store(MonotonicClock.now, ordering: .relaxed)
            let failed = pending.withUnsafeBytes { BufferedWriter.writeAll(descriptor, $0, patience: nil) }
            writingSince.store(0, ordering: .relaxed)
            if failed {
                lock.withLock { _ in
                    closed = true
                    buffer.removeAll()
                    flushing.store(false, ordering: .sequentiallyConsistent)
                }
                onClosed()
                return
            }
        }
        if turnedAway.exchange(false, ordering: .sequentiallyConsistent) { onResumed() }
    }
}
