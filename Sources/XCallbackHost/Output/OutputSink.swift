import XCallbackURL

/// Where the records of one input stream go: stdout, or one socket
/// connection. Thread-safe; records arrive from any thread.
final class OutputSink: Sendable {
    private struct State {
        var nextSequence: UInt64 = 0
        var held: [UInt64: OutcomeRecord] = [:]
        var emitted: UInt64 = 0
    }

    let format: OutputFormat
    let keepOrder: Bool
    let opener: CallbackOpener?
    private let writer: BufferedWriter
    private let state = ConditionLock(State())

    init(descriptor: Int32, format: OutputFormat, keepOrder: Bool,
         opener: CallbackOpener?, onClosed: @escaping @Sendable () -> Void) {
        self.writer = BufferedWriter(descriptor: descriptor, onClosed: onClosed)
        self.format = format
        self.keepOrder = keepOrder
        self.opener = opener
    }

    /// Writes (or opens) one record; in input order with `--keep-order`.
    func emit(_ record: OutcomeRecord) {
        state.withLock { state in
            // Written under this lock so records from racing threads keep
            // the order the reorder buffer released them in.
            if keepOrder {
                state.held[record.sequence] = record
                while let next = state.held.removeValue(forKey: state.nextSequence) {
                    deliver(next)
                    state.nextSequence += 1
                }
            } else {
                deliver(record)
            }
            state.emitted += 1
        }
        state.broadcast()
    }

    /// Writes whatever is buffered.
    func flush() { writer.flush() }

    /// Records emitted so far.
    var emittedCount: UInt64 { state.withLock { $0.emitted } }

    /// Waits until `count` records were emitted; false if `deadline` came first.
    func waitForEmitted(_ count: UInt64, deadline: UInt64?) -> Bool {
        state.wait(until: { $0.emitted >= count }, deadline: deadline) { $0.emitted >= count }
    }

    private func deliver(_ record: OutcomeRecord) {
        if let opener, let url = record.resolvedCallback {
            opener.open(url)
        } else {
            writer.append { format.write(record, to: &$0) }
        }
    }
}
