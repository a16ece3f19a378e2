import XCallbackMetrics
import XCallbackSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes the records of one socket connection without ever blocking the
/// thread that hands them over.
///
/// Records are completed on shared threads (one worker's reply reader serves
/// every connection), so a write that blocked because one client is not
/// reading would stall every other connection too. Bytes go out with
/// non-blocking sends; what the socket does not take at once is written by
/// a drain thread of this connection's own. The connection's input waits
/// (`waitForRoom`) while `maxWaitingRecords` records wait to be written, so
/// a client that stops reading holds a bounded number of records and
/// delays no one but itself. Every chunk the drain thread writes has one
/// deadline as a whole (`writeDeadline`, the host's `--idle-timeout`): a
/// client that has not taken it by then is dropped, its connection shut
/// down. Once the host is stopping, such a client gets at most the grace
/// period to read; then the connection is shut down, so it cannot hold the
/// host up either.
final class ConnectionWriter: OutputWriter, @unchecked Sendable {
    // @unchecked: all state is guarded by `state`.
    private struct State {
        var buffer: [UInt8] = []
        /// Records in `buffer`.
        var bufferedRecords = 0
        /// Records in the chunk the drain thread is writing.
        var writingRecords = 0
        /// A drain thread owns the writing until the buffer is empty.
        var draining = false
        /// The client is gone (EPIPE, ECONNRESET…): records are dropped.
        var closed = false

        var waitingRecords: Int { bufferedRecords + writingRecords }

        mutating func close() {
            closed = true
            buffer = []
            bufferedRecords = 0
            writingRecords = 0
        }
    }

    let descriptor: Int32
    let maxWaitingRecords: Int
    private let stop: StopSignal
    private let gracePeriod: UInt64
    private let state = ConditionLock(State())

    /// How often a wait for a client that is not reading looks at `stop`
    /// (the stop signal is a pipe, not something a condition can wait on).
    private static let stopCheckInterval: UInt64 = 100_000_000

    /// Counts the nanoseconds the input waited for a client that does not
    /// read (`run --metrics`).
    private let waited: Counter?

    /// How long the client may take to read one chunk of its records.
    private let writeDeadline: UInt64
    /// Told once, when the client is dropped for not reading.
    private let onDropped: @Sendable () -> Void

    init(descriptor: Int32, maxWaitingRecords: Int, stop: StopSignal, gracePeriod: Duration,
         writeDeadline: Duration, waited: Counter? = nil, onDropped: @escaping @Sendable () -> Void = {}) {
        self.waited = waited
        self.writeDeadline = writeDeadline.nanoseconds
        self.onDropped = onDropped
        self.descriptor = descriptor
        self.maxWaitingRecords = maxWaitingRecords
        self.stop = stop
        self.gracePeriod = gracePeriod.nanoseconds
    }

    /// Adds one record. On a batching thread the bytes go out before it
    /// blocks for more input (see `BatchingThread`); elsewhere at once.
    func append(_ fill: (inout [UInt8]) -> Void) {
        let deferred = BatchingThread.isCurrent
        let full = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            fill(&state.buffer)
            state.bufferedRecords += 1
            return state.buffer.count >= BufferedWriter.threshold
        }
        if !deferred || full { flush() }
        if deferred { _ = BatchingThread.deferFlush(self) }
    }

    /// Sends what the socket takes now, without waiting; a drain thread
    /// writes the rest.
    func flush() {
        let startDrain = state.withLock { state -> Bool in
            guard !state.draining, !state.closed, !state.buffer.isEmpty else { return false }
            guard let sent = Self.transmit(descriptor, state.buffer) else {
                state.close()
                return false
            }
            if sent == state.buffer.count {
                state.buffer.removeAll(keepingCapacity: state.buffer.capacity <= 4 * BufferedWriter.threshold)
                state.bufferedRecords = 0
                return false
            }
            // The records partly sent still count as waiting until the
            // drain thread has written their ends.
            state.buffer.removeFirst(sent)
            state.draining = true
            return true
        }
        state.broadcast()
        if startDrain { Threads.detach { [self] in drain() } }
    }

    /// Returns at once when the host is stopping, so the input sees the
    /// stop and ends.
    func waitForRoom() {
        // Cheap when there is room: the reader asks before every line.
        guard state.withLock({ $0.waitingRecords >= maxWaitingRecords }) else { return }
        // This thread is about to block: what it batched (frames to a
        // worker, other records) must go out first, as before any wait.
        BatchingThread.flushDeferred()
        flush()
        let hasRoom = { (state: State) in state.closed || state.waitingRecords < self.maxWaitingRecords }
        let began = MonotonicClock.now
        defer { waited?.add(MonotonicClock.now &- began) }
        while !stop.isRaised {
            let deadline = MonotonicClock.now + Self.stopCheckInterval
            if state.wait(until: hasRoom, deadline: deadline, then: { hasRoom($0) }) { return }
        }
    }

    /// Once the host is stopping, waits at most the grace period, then shuts
    /// the connection down and drops what its client did not read.
    func finish() {
        flush()
        let isDone = { (state: State) in !state.draining && (state.closed || state.buffer.isEmpty) }
        var stopDeadline: UInt64?
        while true {
            let now = MonotonicClock.now
            if stopDeadline == nil && stop.isRaised { stopDeadline = now + gracePeriod }
            if let stopDeadline, now >= stopDeadline { break }
            let deadline = min(now + Self.stopCheckInterval, stopDeadline ?? .max)
            if state.wait(until: isDone, deadline: deadline, then: { isDone($0) }) { return }
        }
        // A blocked send fails at once on a shut-down socket; the drain
        // thread then marks the connection closed.
        shutdown(descriptor, Int32(SHUT_RDWR))
        state.withLock { state in if !state.draining { state.close() } }
        state.wait(until: isDone) { _ in }
    }

    /// Writes the buffer, chunk by chunk, until it is empty or the client
    /// is gone; drops a client that does not take a chunk by its deadline.
    private func drain() {
        while true {
            let chunk = state.withLock { state -> [UInt8]? in
                guard !state.closed, !state.buffer.isEmpty else {
                    state.draining = false
                    return nil
                }
                let chunk = state.buffer
                state.buffer = []
                state.writingRecords = state.bufferedRecords
                state.bufferedRecords = 0
                return chunk
            }
            state.broadcast()
            guard let chunk else { return }
            let outcome = DeadlineWrite.send(descriptor, chunk, deadline: MonotonicClock.now + writeDeadline)
            if outcome == .late {
                // Shut down, not closed: the descriptor is the input's too,
                // which now sees the end of the connection and ends it.
                shutdown(descriptor, Int32(SHUT_RDWR))
                onDropped()
            }
            state.withLock { state in
                if outcome == .written { state.writingRecords = 0 } else { state.close() }
            }
        }
    }

    /// Sends as many of `bytes` as the socket takes now. The count sent,
    /// or nil when the client is gone.
    private static func transmit(_ descriptor: Int32, _ bytes: [UInt8]) -> Int? {
        let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
        return bytes.withUnsafeBytes { raw -> Int? in
            var offset = 0
            while offset < raw.count {
                let count = send(descriptor, raw.baseAddress! + offset, raw.count - offset, flags)
                if count >= 0 {
                    offset += count
                } else if errno == EINTR {
                    continue
                } else if errno == EAGAIN || errno == EWOULDBLOCK {
                    break
                } else {
                    return nil
                }
            }
            return offset
        }
    }
}
