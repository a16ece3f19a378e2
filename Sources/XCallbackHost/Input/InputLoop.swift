import Synchronization
import XCallbackMetrics
import XCallbackSystem

/// Reads one input stream (stdin, the FIFO, or one socket connection) and
/// dispatches its lines; see `HandoffLoop` for the threading.
final class InputLoop: Sendable {
    let sink: OutputSink
    private let loop: HandoffLoop<LineReader.Line>
    private let watchdog: StallWatchdog?
    /// Set once a stop's grace period is over: a line still to be run is
    /// answered `ShuttingDown` instead (`relieveStalledReader`).
    private let pastGrace = PastGrace()

    /// Requests dispatched but not yet answered before reading pauses: a
    /// flood of input slows the reader instead of growing memory.
    static let maxInFlight: UInt64 = 4096

    init(reader: LineReader, dispatcher: Dispatcher, sink: OutputSink, watchdog: StallWatchdog?) {
        self.sink = sink
        self.watchdog = watchdog
        // The sink's: `run --metrics` reads the stream's lines there.
        let counter = sink.stream.lines
        let box = UncheckedReader(reader)
        reader.hasRequestsInFlight = { [counter, sink] in
            counter.value.load(ordering: .relaxed) > sink.emittedCount
        }
        self.reader = box
        let lane = dispatcher.makeLane()
        let stalled = StalledView()
        loop = HandoffLoop(
            read: { [counter, sink, stalled] in
                let sent = counter.value.load(ordering: .relaxed)
                // Only while requests pile up: a quarter of the window.
                if sent >= Self.lookFrom {
                    let outstanding = sent - sink.emittedCount
                    if outstanding >= Self.lookFrom {
                        Self.keepWindow(sent: sent, outstanding: outstanding, sink: sink, stalled: stalled)
                    }
                }
                // And no more than as many records waiting for a socket
                // client that is not reading.
                sink.waitForRoom()
                return box.reader.next(beforeBlocking: BatchingThread.flushDeferred)
            },
            process: { [counter, dispatcher, sink, lane, pastGrace] line in
                let sequence = counter.value.wrappingAdd(1, ordering: .relaxed).oldValue
                switch line {
                case .text(let bytes, let storage):
                    withExtendedLifetime(storage) {
                        if pastGrace.value.load(ordering: .relaxed) {
                            dispatcher.refuseWhileStopping(line: bytes, sequence: sequence, sink: sink)
                            return
                        }
                        if lane.enter() {
                            defer { lane.leave() }
                            if dispatcher.submitFast(line: bytes, sequence: sequence, sink: sink, lane: lane) { return }
                        }
                        dispatcher.submit(line: bytes, sequence: sequence, sink: sink)
                    }
                case .refused(let bytes, let storage):
                    withExtendedLifetime(storage) {
                        dispatcher.refuseWhileStopping(line: bytes, sequence: sequence, sink: sink)
                    }
                case .overlong(let byteCount, let prefix):
                    dispatcher.rejectOverlong(byteCount: byteCount, prefix: prefix, sequence: sequence, sink: sink)
                }
            },
            watchdog: watchdog,
            // The records the stalled thread batched before the item it is
            // stuck in (an in-process handler): they would otherwise wait
            // for that handler to end, or for its Timeout.
            onHandOff: { [sink] in sink.writeBatched() })
    }

    private let reader: UncheckedReader

    /// From this many requests in flight, the input looks at its plug-ins'
    /// shares (`InputShares`): every 32 lines, so that the stall clock of
    /// a plug-in that stopped answering has started well before its
    /// requests could fill the window.
    static let lookFrom: UInt64 = maxInFlight / 4

    /// Waits while the window is full: until half of it has drained (one
    /// wake-up per 2,048 records, not one per record), not counting the
    /// requests of plug-ins that have stalled (`InputShares`), which leave
    /// the window to the others. With `--keep-order` a stalled plug-in's
    /// requests count all the same: the records behind its oldest would
    /// wait for it anyway, in memory, so reading on would only grow that.
    private static func keepWindow(sent: UInt64, outstanding: UInt64, sink: OutputSink, stalled: StalledView) {
        guard outstanding >= maxInFlight else {
            if sent & 31 == 0 && !sink.keepOrder { stalled.look(at: sink.shares, now: MonotonicClock.coarseNow) }
            return
        }
        BatchingThread.flushDeferred()
        guard !sink.keepOrder else {
            _ = sink.waitForEmitted(sent - maxInFlight / 2, deadline: nil)
            return
        }
        while true {
            // While a plug-in has stalled the window stays full, and this
            // runs for every line: the slots are looked over once a tick.
            let now = MonotonicClock.coarseNow
            if now != stalled.lookedAt { stalled.look(at: sink.shares, now: now) }
            let excluded = sink.shares.held(in: stalled.slots)
            // Outstanding, not counting the stalled: room once under the window.
            guard sent - min(sent, excluded) >= maxInFlight + sink.emittedCount else { return }
            let target = sent - excluded - maxInFlight / 2
            // Looked at again a few times within the patience: a plug-in
            // that stops answering is seen to have stalled soon after.
            if sink.waitForEmitted(target, deadline: MonotonicClock.now + InputShares.stallPatience / 4) { return }
        }
    }

    func start() { loop.start() }

    /// Whether a stop dropped a line its writer had not finished.
    var droppedPartialLine: Bool { reader.reader.droppedPartialLine }
    /// Lines that arrived after the stop and were answered `ShuttingDown`.
    var refusedCount: Int { reader.reader.refusedCount }
    /// Whether a socket connection was closed for being idle.
    var closedIdle: Bool { reader.reader.closedIdle }
    /// Whether input was still waiting when reading stopped for good.
    var leftInputUnread: Bool { reader.reader.leftInputUnread }
    func waitUntilInputEnds() { loop.waitUntilInputEnds() }

    /// As `waitUntilInputEnds`, until `deadline` at most; false if it did not.
    func waitUntilInputEnds(deadline: UInt64) -> Bool { loop.waitUntilInputEnds(deadline: deadline) }

    /// A stop is past its grace period: lines still to be run (read before
    /// the stop, behind one that stalled) are answered `ShuttingDown`, and
    /// if the thread that owns the input is stuck in a line, a new one reads
    /// on to the stop, past the cap on stalled threads
    /// (`StallWatchdog.relieve`): an in-process handler that never returns
    /// must not keep the host from stopping.
    func relieveStalledReader() {
        pastGrace.value.store(true, ordering: .relaxed)
        watchdog?.relieve(loop)
    }

    /// Counted lines so far: the records the sink owes.
    var lineCount: UInt64 { sink.stream.lines.value.load(ordering: .acquiring) }
}

/// The reader is touched only by the thread owning the input.
private final class UncheckedReader: @unchecked Sendable {
    let reader: LineReader
    init(_ reader: LineReader) { self.reader = reader }
}

/// The plug-ins `keepWindow` last found stalled, and when (coarse ns).
/// Touched only by the thread that owns the input (ownership moves with
/// `HandoffLoop`'s atomics, which order it).
private final class StalledView: @unchecked Sendable {
    var slots: [Int] = []
    var lookedAt: UInt64 = 0

    func look(at shares: InputShares, now: UInt64) {
        slots = shares.stalledSlots(now: now)
        lookedAt = now
    }
}

/// Whether a stop's grace period is over, shared by the loop's closures.
private final class PastGrace: Sendable {
    let value = Atomic<Bool>(false)
}
