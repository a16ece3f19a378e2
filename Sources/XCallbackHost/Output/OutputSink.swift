import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where the records of one input stream go: stdout, or one socket
/// connection. Thread-safe; records arrive from any thread.
final class OutputSink: Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var nextSequence: UInt64 = 0
        var held: [UInt64: OutcomeRecord] = [:]
        var emitted: UInt64 = 0
        var closed = false
    }

    let descriptor: Int32
    let format: OutputFormat
    let keepOrder: Bool
    let opener: CallbackOpener?
    private let onClosed: @Sendable () -> Void
    private let state = ConditionLock(State())

    /// Buffered bytes past which a batch is written even mid-burst.
    static let flushThreshold = 64 * 1024

    init(descriptor: Int32, format: OutputFormat, keepOrder: Bool,
         opener: CallbackOpener?, onClosed: @escaping @Sendable () -> Void) {
        self.descriptor = descriptor
        self.format = format
        self.keepOrder = keepOrder
        self.opener = opener
        self.onClosed = onClosed
    }

    /// Writes (or opens) one record; in input order with `--keep-order`.
    func emit(_ record: OutcomeRecord) {
        let immediate = !BatchingThread.isCurrent
        var closedNow = false
        state.withLock { state in
            if keepOrder {
                state.held[record.sequence] = record
                while let next = state.held.removeValue(forKey: state.nextSequence) {
                    append(next, to: &state)
                    state.nextSequence += 1
                }
            } else {
                append(record, to: &state)
            }
            state.emitted += 1
            if immediate || state.buffer.count >= Self.flushThreshold {
                closedNow = writeBuffer(&state)
            }
        }
        state.broadcast()
        if closedNow { onClosed() }
    }

    /// Writes whatever is buffered. The input thread calls this before it
    /// blocks waiting for more input: a record is never held back for input.
    func flush() {
        var closedNow = false
        state.withLock { closedNow = writeBuffer(&$0) }
        if closedNow { onClosed() }
    }

    /// Records emitted so far.
    var emittedCount: UInt64 { state.withLock { $0.emitted } }

    /// Waits until `count` records were emitted; false if `deadline` came first.
    func waitForEmitted(_ count: UInt64, deadline: UInt64?) -> Bool {
        state.wait(until: { $0.emitted >= count || $0.closed }, deadline: deadline) { $0.emitted >= count || $0.closed }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    private func append(_ record: OutcomeRecord, to state: inout State) {
        if let opener, let url = record.resolvedCallback {
            opener.open(url)
        } else if !state.closed {
            format.write(record, to: &state.buffer)
        }
    }

    /// Returns true when this write found the reader gone.
    private func writeBuffer(_ state: inout State) -> Bool {
        guard !state.buffer.isEmpty, !state.closed else {
            state.buffer.removeAll(keepingCapacity: true)
            return false
        }
        let failed = state.buffer.withUnsafeBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return true  // EPIPE, ECONNRESET…: the reader is gone
                }
                offset += written
            }
            return false
        }
        state.buffer.removeAll(keepingCapacity: true)
        if failed {
            state.closed = true
            return true
        }
        return false
    }
}
