import Synchronization
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's writes to one worker's socket, which never make the caller
/// wait for the worker.
///
/// Frames are batched as `BufferedWriter` batches them (one write per burst,
/// `BatchingThread`), and each batch is written without blocking. What the
/// socket does not take waits in the buffer for the worker's flusher, a
/// thread of its own that writes it as the worker reads; senders meanwhile
/// add to the buffer and go on. Only a worker that has not read for
/// `stuckAfter` makes the writer busy: `turnAwayIfBusy` then tells a sender
/// to keep its request elsewhere (the endpoint's waiting line), and
/// `onResumed` says when to send it. A worker that stops reading its socket
/// holds up its own requests only: before, the input thread that wrote to
/// it waited with it, and with it every plug-in's requests.
final class WorkerRequestWriter: Flushable, Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var closed = false
        /// The flusher owns the socket: what is buffered is its to write.
        var flushing = false
        var flusherStarted = false
        /// The flusher is writing, outside the lock: the descriptor must
        /// not be closed (and its number reused) under it.
        var flusherWriting = false
    }

    private let descriptor: Int32
    private let state = ConditionLock(State())
    /// A sender was turned away while the flusher waited.
    private let turnedAway = Atomic<Bool>(false)
    /// When the flusher's current write began (monotonic ns; 0: none).
    private let writingSince = Atomic<UInt64>(0)
    private let onClosed: @Sendable () -> Void
    private let onResumed: @Sendable () -> Void

    /// How long the flusher may wait for the worker before senders are
    /// turned away: a worker keeping up drains its socket in microseconds.
    static let stuckAfter: UInt64 = 100_000_000

    /// `onClosed` runs once, when a write finds the worker gone; `onResumed`
    /// once the flusher has written everything, if a sender was turned away.
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
        let closedNow = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            fill(&state.buffer)
            return !deferred || state.buffer.count >= BufferedWriter.threshold ? writeWithoutWaiting(&state) : false
        }
        if closedNow { onClosed() }
        if deferred { _ = BatchingThread.deferFlush(self) }
    }

    func flush() {
        if state.withLock({ writeWithoutWaiting(&$0) }) { onClosed() }
    }

    /// True while the flusher has waited for the worker past `stuckAfter`:
    /// the caller should keep its request and send it once `onResumed`
    /// runs (which it will: either the flusher sees this turn-away, or this
    /// sees the flusher done and answers false).
    func turnAwayIfBusy() -> Bool {
        guard isStuck(longerThan: Self.stuckAfter) else { return false }
        turnedAway.store(true, ordering: .sequentiallyConsistent)
        return writingSince.load(ordering: .sequentiallyConsistent) != 0
    }

    /// Whether the flusher has waited for the worker longer than `limit` ns.
    func isStuck(longerThan limit: UInt64) -> Bool {
        let since = writingSince.load(ordering: .relaxed)
        return since != 0 && MonotonicClock.now &- since > limit
    }

    /// Writes what the socket takes now, unless the flusher has the socket;
    /// wakes the flusher for the rest. True when the worker is gone.
    private func writeWithoutWaiting(_ state: inout State) -> Bool {
        guard !state.buffer.isEmpty, !state.closed, !state.flushing else { return false }
        var offset = 0
        while offset < state.buffer.count {
            let sent = state.buffer.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            if sent < 0 && errno == EINTR { continue }
            if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            state.closed = true
            state.buffer = []
            return true
        }
        if offset == state.buffer.count {
            state.buffer.removeAll(keepingCapacity: state.buffer.capacity <= 4 * BufferedWriter.threshold)
            return false
        }
        state.buffer.removeFirst(offset)
        state.flushing = true
        if !state.flusherStarted {
            state.flusherStarted = true
            Threads.detach { [self] in flushForever() }
        }
        self.state.broadcast()
        return false
    }

    /// The flusher: whenever the socket was full, writes the buffer as the
    /// worker reads it, until the buffer is empty; ends with the socket.
    private func flushForever() {
        // The buffers are swapped, not made anew: senders fill one while
        // this writes the other, and neither grows again from nothing.
        var pending: [UInt8] = []
        while true {
            let taken = state.wait(until: { $0.closed || ($0.flushing && !$0.buffer.isEmpty) }) { state -> Bool in
                guard !state.closed else { return false }
                state.flusherWriting = true
                pending.removeAll(keepingCapacity: pending.capacity <= 4 * BufferedWriter.threshold)
                swap(&state.buffer, &pending)
                return true
            }
            guard taken else { return }
            writingSince.store(MonotonicClock.now, ordering: .relaxed)
            let failed = pending.withUnsafeBytes { BufferedWriter.writeAll(descriptor, $0, patience: nil) }
            writingSince.store(0, ordering: .sequentiallyConsistent)
            // Done once nothing was appended meanwhile: decided under the
            // lock, where appends happen.
            state.withLock { state in
                state.flusherWriting = false
                if failed {
                    state.closed = true
                    state.buffer = []
                }
                if state.buffer.isEmpty { state.flushing = false }
            }
            state.broadcast()
            if failed {
                onClosed()
                return
            }
            if turnedAway.exchange(false, ordering: .sequentiallyConsistent) { onResumed() }
        }
    }

    /// Ends the flusher (the worker is gone), and returns once it is not
    /// writing: then the descriptor can be closed.
    func close() {
        state.withLock { $0.closed = true }
        state.broadcast()
        // A write still under way fails now, and nothing writes after it.
        _ = shutdown(descriptor, Int32(SHUT_WR))
        state.wait(until: { !$0.flusherWriting }) { _ in }
    }
}
