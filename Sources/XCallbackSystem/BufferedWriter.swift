import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes bytes to a descriptor in as few `write` calls as batching allows
/// (see `BatchingThread`). Thread-safe; bytes keep the order of `append`.
public final class BufferedWriter: Flushable, @unchecked Sendable {
    // @unchecked: all state is guarded by `state`.
    private struct State {
        var buffer: [UInt8] = []
        var closed = false
    }

    public let descriptor: Int32
    private let state = ConditionLock(State())
    private let onClosed: @Sendable () -> Void
    /// When the write under way began (monotonic ns; 0: none): a reader
    /// that stopped reading shows as a write that never ends.
    private let writingSince = Atomic<UInt64>(0)

    /// Buffered bytes past which a batch is written even mid-burst.
    public static let threshold = 64 * 1024

    /// How long a write may wait for the reader before the input loop's
    /// watchdog moves on (`StallClock`); nil: as long as the reader takes.
    private let patience: UInt64?
    /// Whether the descriptor is the pipe stderr is on as well (`2>&1`):
    /// each write then holds whole lines of at most `PIPE_BUF` bytes where
    /// it can (only writes that small are never interleaved with another
    /// process's), and takes its turn with the host's log lines
    /// (`SharedPipe`), so a log line can never land inside a record.
    private let wholeLines: Bool
    /// Told how long each write took, waiting for the reader included
    /// (`run --metrics`); nil: not asked, and no clock is read for it.
    private let onWritten: (@Sendable (UInt64) -> Void)?

    /// `onClosed` runs once, when a write finds the reader gone (EPIPE…).
    /// `patience` is for a reader that may stop reading altogether (a
    /// worker); stdout, read at a person's pace, waits with none.
    public init(descriptor: Int32, patience: UInt64? = StallClock.readerPatience, wholeLines: Bool = false,
                onClosed: @escaping @Sendable () -> Void = {}, onWritten: (@Sendable (UInt64) -> Void)? = nil) {
        self.onWritten = onWritten
        self.descriptor = descriptor
        self.patience = patience
        self.wholeLines = wholeLines
        self.onClosed = onClosed
    }

    /// Adds bytes; `fill` appends them to the buffer under the writer's lock,
    /// so callers that must keep an order among themselves can rely on it.
    public func append(_ fill: (inout [UInt8]) -> Void) {
        // Asked first, in one look-up of the thread's list: a flush this
        // append turns out not to need (a full buffer written at once, a
        // closed writer) writes nothing.
        let deferred = BatchingThread.deferFlush(self)
        var closedNow = false
        state.withLock { state in
            guard !state.closed else { return }
            fill(&state.buffer)
            if !deferred || state.buffer.count >= Self.threshold {
                closedNow = write(descriptor, &state)
            }
        }
        if closedNow { onClosed() }
    }

    /// Whether a write has waited for its reader longer than `limit` ns.
    public func isStuck(longerThan limit: UInt64) -> Bool {
        let since = writingSince.load(ordering: .relaxed)
        return since != 0 && MonotonicClock.now &- since > limit
    }

    public func flush() {
        var closedNow = false
        state.withLock { closedNow = write(descriptor, &$0) }
        if closedNow { onClosed() }
    }

    /// Writes the buffer; true when this write found the reader gone.
    private func write(_ descriptor: Int32, _ state: inout State) -> Bool {
        guard !state.buffer.isEmpty, !state.closed else { return false }
        let began = MonotonicClock.now
        writingSince.store(began, ordering: .relaxed)
        defer {
            writingSince.store(0, ordering: .relaxed)
            onWritten?(MonotonicClock.now &- began)
        }
        let failed = state.buffer.withUnsafeBytes { bytes in
            wholeLines
                ? SharedPipe.turns.withLock { _ in Self.writeLines(descriptor, bytes, patience: patience) }
                : Self.writeAll(descriptor, bytes, patience: patience)
        }
        state.buffer.removeAll(keepingCapacity: state.buffer.capacity <= 4 * Self.threshold)
        if failed { state.closed = true }
        return failed
    }

    /// Writes all of `bytes`, retrying on EINTR; true when the reader is gone
    /// (or the write failed otherwise).
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer,
                         patience: UInt64? = StallClock.readerPatience) -> Bool {
        StallClock.whileWaitingForReader(patience: patience) { writeAllNow(descriptor, bytes) }
    }

    /// `writeAll` in pieces that end at a line's end and hold at most
    /// `PIPE_BUF` bytes (a longer line goes alone, whole).
    static func writeLines(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, patience: UInt64?) -> Bool {
        let atomic = Int(PIPE_BUF)
        var start = 0
        while start < bytes.count {
            var end = min(start + atomic, bytes.count)
            if end < bytes.count {
                // The last line end within reach; else the end of this one line.
                if let lastNewline = bytes[start..<end].lastIndex(of: 0x0A) {
                    end = lastNewline + 1
                } else {
                    end = (bytes[end...].firstIndex(of: 0x0A).map { $0 + 1 }) ?? bytes.count
                }
            }
            if writeAll(descriptor, UnsafeRawBufferPointer(rebasing: bytes[start..<end]), patience: patience) { return true }
            start = end
        }
        return false
    }

    private static func writeAllNow(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    waitUntilWritable(descriptor)
                    continue
                }
                return true
            }
            offset += written
        }
        return false
    }

    /// Waits for room to write. EAGAIN means somebody made the description
    /// non-blocking (any process sharing it can: a terminal, a pipe handed
    /// to several programs), not that the reader left: that is EPIPE, which
    /// the write after this reports (poll returns POLLERR then).
    public static func waitUntilWritable(_ descriptor: Int32) {
        var event = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        while poll(&event, 1, -1) < 0 && errno == EINTR {}
    }
}

/// Writes whole buffers to a descriptor, for callers outside the host that
/// write records themselves (the queue's hosts, `outcomes`).
public enum RecordWrite {
    /// Writes all of `bytes`, retrying short writes; false when the reader is gone.
    public static func all(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        !bytes.withUnsafeBytes { BufferedWriter.writeAll(descriptor, $0) }
    }
}
