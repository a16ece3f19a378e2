import Synchronization
import XCallbackMetrics
import XCallbackSystem
import XCallbackURL

/// Where the records of one input stream go: stdout, or one socket
/// connection. Thread-safe; records arrive from any thread.
final class OutputSink: Sendable {
    private struct State {
        var nextSequence: UInt64 = 0
        var held: [UInt64: OutcomeRecord] = [:]
        var emitted: UInt64 = 0
        /// The lowest count a waiter waits for (`.max`: none). A record
        /// wakes the waiters only when it reaches it: a reader waiting for
        /// room is woken once, not once per record (two system calls each).
        var wakeAt: UInt64 = .max
    }

    let format: OutputFormat
    let keepOrder: Bool
    let opener: CallbackOpener?
    /// Takes each record instead of the writer (a fed input's records).
    let receiver: (any RecordReceiver)?
    /// Counts every record written, shared by all the host's sinks.
    let tally: OutcomeTally
    /// The counts of the input these records answer (`run --metrics`).
    let input: InputMetrics?
    /// Whether a success or cancel may be written from its bytes
    /// (`emit(answered:_:)`): `url` records, in no particular order, written
    /// rather than opened or handed on.
    let takesBytes: Bool
    /// Whether each record may be written as it comes, encoded by the
    /// caller (`emit(answered:_:)`): no order to keep, nothing to open or
    /// hand on. Kept, not worked out for each record (`receiver` is an
    /// existential, copied to be compared with nil).
    private let writesAsAnswered: Bool
    private let writer: any OutputWriter
    private let state = ConditionLock(State())
    /// Its input stream's lines (numbered by its input loop) and records:
    /// `records` is `State.emitted`, readable without the lock (the input
    /// thread checks it for every line once a window of requests is in
    /// flight, and the lock is the one every record takes). `run --metrics`
    /// reads both at a scrape (`input`).
    let stream = StreamCounts()
    /// What each plug-in holds of this input's requests (`InputShares`).
    let shares = InputShares()

    /// A sink writing to `descriptor` (stdout); `onClosed` runs when its
    /// reader is gone.
    convenience init(descriptor: Int32, format: OutputFormat, keepOrder: Bool,
                     opener: CallbackOpener?, tally: OutcomeTally = OutcomeTally(), input: InputMetrics? = nil,
                     onClosed: @escaping @Sendable () -> Void) {
        // Under `2>&1` the log writes to the same pipe: records then go in
        // whole-line pieces no log line can split.
        let writer = BufferedWriter(descriptor: descriptor, patience: nil,
                                    wholeLines: SharedPipe.isSame(descriptor, as: 2),
                                    onClosed: onClosed,
                                    onWritten: input.map { input -> @Sendable (UInt64) -> Void in { input.outputWaitNanoseconds.add($0) } })
        self.init(writer: writer, format: format, keepOrder: keepOrder, opener: opener, tally: tally, input: input)
    }

    /// A sink for one socket connection: a client that does not read its
    /// records stalls only itself, and is dropped once it has not taken
    /// them for `writeDeadline` (see `ConnectionWriter`).
    convenience init(connection: Int32, format: OutputFormat, keepOrder: Bool, tally: OutcomeTally,
                     stop: StopSignal, gracePeriod: Duration, writeDeadline: Duration, input: InputMetrics? = nil,
                     onDropped: @escaping @Sendable () -> Void = {}) {
        let writer = ConnectionWriter(descriptor: connection, maxWaitingRecords: Int(InputLoop.maxInFlight),
                                      stop: stop, gracePeriod: gracePeriod, writeDeadline: writeDeadline,
                                      waited: input?.outputWaitNanoseconds, onDropped: onDropped)
        self.init(writer: writer, format: format, keepOrder: keepOrder, opener: nil, tally: tally, input: input)
    }

    /// A sink handing each record to `receiver`, unencoded (`Host.serve(feed:receiver:)`).
    convenience init(receiver: any RecordReceiver, format: OutputFormat, tally: OutcomeTally,
                     input: InputMetrics? = nil) {
        self.init(writer: UnusedWriter(), format: format, keepOrder: false, opener: nil, tally: tally,
                  input: input, receiver: receiver)
    }

    private init(writer: any OutputWriter, format: OutputFormat, keepOrder: Bool,
                 opener: CallbackOpener?, tally: OutcomeTally, input: InputMetrics? = nil,
                 receiver: (any RecordReceiver)? = nil) {
        self.receiver = receiver
        self.input = input
        self.writer = writer
        self.format = format
        self.keepOrder = keepOrder
        self.opener = opener
        self.tally = tally
        writesAsAnswered = !keepOrder && opener == nil && receiver == nil
        takesBytes = format == .url && writesAsAnswered
        input?.open(stream)
    }

    deinit {
        // No request holds the sink any more: its last record is counted.
        input?.close(stream)
    }

    /// Writes (or opens) one record; in input order with `--keep-order`.
    func emit(_ record: OutcomeRecord) {
        let wake = state.withLock { state -> Bool in
            // Counted first, so a client that has its record sees it counted
            // (`run --metrics`); waiters take this lock to look, after it.
            let wake = count(&state)
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
            return wake
        }
        if wake { state.broadcast() }
    }

    /// Counts a record; true when a waiter waits for this many.
    private func count(_ state: inout State) -> Bool {
        state.emitted += 1
        stream.records.value.store(state.emitted, ordering: .releasing)
        guard state.emitted >= state.wakeAt else { return false }
        state.wakeAt = .max
        return true
    }

    /// Writes a success or cancel record the caller encodes itself (the
    /// fast lane, from bytes). Not for a sink that keeps order or opens
    /// callbacks: those need the `OutcomeRecord`.
    func emit(answered kind: OutcomeKind, _ write: (inout [UInt8]) -> Void) {
        precondition(writesAsAnswered, "the record must go through emit(_:)")
        let wake = state.withLock { state -> Bool in
            let wake = count(&state)
            tally.count(answered: kind)
            writer.append(write)
            return wake
        }
        if wake { state.broadcast() }
    }

    /// Writes whatever is buffered, and returns once it is written.
    func flush() { writer.finish() }

    /// Writes what a batching thread left buffered, as that thread would
    /// before it blocks (a socket's writer sends what the socket takes).
    func writeBatched() { writer.flush() }

    /// Waits while too many records wait for a reader (back-pressure).
    func waitForRoom() { writer.waitForRoom() }

    /// Records emitted so far.
    var emittedCount: UInt64 { stream.records.value.load(ordering: .acquiring) }

    /// Waits until `count` records were emitted; false if `deadline` came first.
    func waitForEmitted(_ count: UInt64, deadline: UInt64?) -> Bool {
        state.wait(until: { $0.emitted >= count }, deadline: deadline,
                   beforeSleeping: { $0.wakeAt = min($0.wakeAt, count) }) { $0.emitted >= count }
    }

    private func deliver(_ record: OutcomeRecord) {
        tally.count(record.outcome)
        if let receiver {
            receiver.receive(record)
        } else if let opener, let url = record.resolvedCallback, opener.allows(url) {
            opener.open(url)
        } else {
            writer.append { format.write(record, to: &$0) }
        }
    }
}

/// The writer of a sink whose records go to a receiver: nothing is written.
private final class UnusedWriter: OutputWriter {
    func append(_ fill: (inout [UInt8]) -> Void) {}
    func waitForRoom() {}
    func finish() {}
    func flush() {}
}
