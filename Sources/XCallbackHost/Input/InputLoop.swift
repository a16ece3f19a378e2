import Synchronization

/// Reads one input stream (stdin, the FIFO, or one socket connection) and
/// dispatches its lines, on a thread of its own.
///
/// In-process handlers run on the reading thread, which is the fastest path
/// but would let one slow handler stall the stream. So, as Go's scheduler
/// hands a blocked thread's work to a new one, the `StallWatchdog` gives
/// the input to a fresh thread when a handler call runs past a threshold;
/// the stalled thread finishes its call and then exits.
final class InputLoop: Sendable {
    private let reader: ReaderBox
    private let dispatcher: Dispatcher
    let sink: OutputSink
    private let state = Mutex(State())
    private let finished = ConditionLock(false)
    private let watchdog: StallWatchdog?
    /// Requests dispatched but not yet answered before reading pauses: a
    /// flood of input slows the reader instead of growing memory.
    let maxInFlight: UInt64

    private struct State {
        var owner = 0
        var callStartedAt: UInt64?
        var sequence: UInt64 = 0
    }

    init(reader: LineReader, dispatcher: Dispatcher, sink: OutputSink, watchdog: StallWatchdog?,
         maxInFlight: UInt64 = 4096) {
        self.watchdog = watchdog
        self.maxInFlight = maxInFlight
        self.reader = ReaderBox(reader)
        self.dispatcher = dispatcher
        self.sink = sink
    }

    /// Starts reading on a new thread.
    func start() {
        Threads.detach { [self] in run(as: 0) }
    }

    /// Waits until the input ended (or reading was told to stop).
    func waitUntilInputEnds() {
        finished.wait(until: { $0 }) { _ in }
    }

    /// Counted lines so far: the records the sink owes.
    var lineCount: UInt64 { state.withLock { $0.sequence } }

    private func run(as owner: Int) {
        BatchingThread.markCurrent()
        let reader = self.reader.reader
        while let line = reader.next(beforeBlocking: sink.flush) {
            let dispatched = state.withLock { $0.sequence }
            if dispatched >= maxInFlight && dispatched - sink.emittedCount >= maxInFlight {
                sink.flush()
                _ = sink.waitForEmitted(dispatched - maxInFlight + 1, deadline: nil)
            }
            let sequence = state.withLock { state -> UInt64 in
                state.callStartedAt = MonotonicClock.now
                defer { state.sequence += 1 }
                return state.sequence
            }
            switch line {
            case .text(let bytes):
                dispatcher.submit(line: bytes, sequence: sequence, sink: sink)
            case .overlong(let byteCount):
                dispatcher.rejectOverlong(byteCount: byteCount, sequence: sequence, sink: sink)
            }
            let stillOwner = state.withLock { state -> Bool in
                guard state.owner == owner else { return false }
                state.callStartedAt = nil
                return true
            }
            if !stillOwner {
                // Another thread took the input while this call stalled.
                sink.flush()
                watchdog?.stalledThreadReturned()
                return
            }
        }
        sink.flush()
        finished.withLock { $0 = true }
        finished.broadcast()
    }

    /// Called by the watchdog: if the current call has run longer than
    /// `threshold`, hands the input to a new thread. Returns true if it did.
    func handOffIfStalled(now: UInt64, threshold: UInt64) -> Bool {
        let newOwner = state.withLock { state -> Int? in
            guard let started = state.callStartedAt, now &- started > threshold else { return nil }
            state.owner += 1
            state.callStartedAt = nil
            return state.owner
        }
        guard let newOwner else { return false }
        Threads.detach { [self] in run(as: newOwner) }
        return true
    }
}

/// Only the thread that owns the input touches the reader (ownership moves
/// under InputLoop's lock), hence unchecked.
private final class ReaderBox: @unchecked Sendable {
    let reader: LineReader
    init(_ reader: LineReader) { self.reader = reader }
}

/// Checks the input loops for stalled handler calls a few times a second.
final class StallWatchdog: Sendable {
    private let loops = Mutex<[InputLoop]>([])
    private let stopped = Atomic<Bool>(false)
    /// A handler call longer than this gets its input handed to a new thread.
    let threshold: UInt64
    /// At most this many stalled threads at once; past it, input waits.
    let maxStalled: Int
    private let stalled = Atomic<Int>(0)

    init(threshold: UInt64 = 50_000_000, maxStalled: Int = 64) {
        self.threshold = threshold
        self.maxStalled = maxStalled
    }

    func stalledThreadReturned() { stalled.subtract(1, ordering: .relaxed) }
    func watch(_ loop: InputLoop) { loops.withLock { $0.append(loop) } }
    func forget(_ loop: InputLoop) { loops.withLock { $0.removeAll { $0 === loop } } }
    func stop() { stopped.store(true, ordering: .releasing) }

    func start() {
        Threads.detach { [self] in
            var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            while !stopped.load(ordering: .acquiring) {
                nanosleep(&pause, nil)
                let now = MonotonicClock.now
                for loop in loops.withLock({ $0 }) where stalled.load(ordering: .relaxed) < maxStalled {
                    if loop.handOffIfStalled(now: now, threshold: threshold) {
                        // Bounds how many threads hanging handlers can take.
                        stalled.add(1, ordering: .relaxed)
                    }
                }
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
