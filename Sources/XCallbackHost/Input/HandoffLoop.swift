import Synchronization
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads items and processes each on the reading thread, the fastest path,
/// without letting one slow item stall the stream: as Go's scheduler hands
/// a blocked thread's work to another, the `StallWatchdog` gives the input
/// to a fresh thread when processing one item runs past a threshold. The
/// stalled thread finishes its item, sees it no longer owns the input, and
/// exits. Used for request lines in the host and for frames in a worker.
final class HandoffLoop<Item>: StallWatchable, @unchecked Sendable {
    // @unchecked: `read` is only ever called by the thread that owns the
    // input; ownership moves with `busySince` (below).
    private let read: () -> Item?
    private let process: (Item) -> Void
    private let watchdog: StallWatchdog?
    private let finished = ConditionLock(false)
    /// When the owner began its current item (coarse monotonic ns), or 0
    /// when it is not processing one. Atomics, not a lock: this is set and
    /// cleared for every request. The owner clears it with a compare-and-
    /// exchange of its own stamp; the watchdog takes the input by clearing
    /// it first, so exactly one of them succeeds.
    private let busySince = Atomic<UInt64>(0)

    /// Run by the thread the input is handed to, before it reads.
    private let onHandOff: (() -> Void)?

    /// `read` returns nil at the end of input; it must flush deferred
    /// writes (`BatchingThread.flushDeferred`) before it blocks. `onHandOff`
    /// runs on each thread the input is handed to, first: a worker writes
    /// there the answers the stalled thread still holds in its batch,
    /// which would otherwise wait for the stalled item to end.
    init(read: @escaping () -> Item?, process: @escaping (Item) -> Void, watchdog: StallWatchdog?,
         onHandOff: (() -> Void)? = nil) {
        self.read = read
        self.process = process
        self.watchdog = watchdog
        self.onHandOff = onHandOff
    }

    /// Starts reading on a new thread.
    func start() {
        watchdog?.watch(self)
        Threads.detach { [self] in run() }
    }

    /// Waits until the input ends.
    func waitUntilInputEnds() {
        finished.wait(until: { $0 }) { _ in }
    }

    /// Waits until the input ends or `deadline` passes; true if it ended.
    func waitUntilInputEnds(deadline: UInt64) -> Bool {
        finished.wait(until: { $0 }, deadline: deadline) { $0 }
    }

    private func run() {
        BatchingThread.markCurrent()
        let clock = StallClock.Owner(loop: self)
        StallClock.setCurrent(clock)
        defer { StallClock.setCurrent(nil) }
        var previousStart: UInt64 = 0
        while let item = read() {
            let now = MonotonicClock.coarseNow
            // The coarse clock (4 ms a tick) moved since the last item
            // began, so that one may have been slow: what it and the items
            // before it produced goes out now, not only when the input runs
            // dry. Behind a burst of slow requests a worker's answers would
            // otherwise all wait for the last one, and miss their deadlines.
            // A stream of quick items pays one flush a tick.
            if now != previousStart { BatchingThread.flushDeferred() }
            previousStart = now
            // Never 0, which means idle; never with the waiting bit.
            clock.stamp = (now | 1) & ~StallClock.waitingBit
            busySince.store(clock.stamp, ordering: .releasing)
            process(item)
            let stillOwner = busySince.compareExchange(expected: clock.stamp, desired: 0,
                                                       ordering: .acquiringAndReleasing).exchanged
            if !stillOwner {
                // Another thread took the input while this item stalled.
                BatchingThread.flushDeferred()
                watchdog?.stalledThreadReturned()
                return
            }
        }
        BatchingThread.flushDeferred()
        watchdog?.forget(self)
        finished.withLock { $0 = true }
        finished.broadcast()
    }

    /// Stops the current item's stall clock (its thread is about to block
    /// on back-pressure); false if the input was already handed off.
    /// Marks the current item as waiting for a reader (`waiting`): the
    /// watchdog then allows it `StallClock.readerPatience` instead of its
    /// threshold. False if the input was already handed off.
    func pause(_ stamp: UInt64, waiting: UInt64) -> Bool {
        busySince.compareExchange(expected: stamp, desired: waiting, ordering: .acquiringAndReleasing).exchanged
    }

    /// Back to processing with `stamp`; false if the watchdog handed the
    /// input off meanwhile (the reader kept it waiting too long).
    func resume(from waiting: UInt64, to stamp: UInt64) -> Bool {
        busySince.compareExchange(expected: waiting, desired: stamp, ordering: .acquiringAndReleasing).exchanged
    }

    func handOffIfStalled(now: UInt64, threshold: UInt64) -> Bool {
        let since = busySince.load(ordering: .acquiring)
        let limit = since & StallClock.waitingBit != 0 ? StallClock.readerPatience : threshold
        // `now` was read before this load: an item that began after it has
        // not been busy at all (and `&-` would wrap to a huge age).
        guard since != 0, now > since, now - since > limit,
              busySince.compareExchange(expected: since, desired: 0, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        Threads.detach { [self] in
            onHandOff?()
            run()
        }
        return true
    }
}

extension HandoffLoop: StallPausable {}

/// A loop the watchdog can relieve.
protocol StallWatchable: AnyObject, Sendable {
    /// Hands the input to a new thread if the current item has been
    /// processed for longer than `threshold`; true if it did.
    func handOffIfStalled(now: UInt64, threshold: UInt64) -> Bool
}

/// Checks the loops for stalled items a few times a second.
final class StallWatchdog: Sendable {
    private let loops = Lock<[any StallWatchable]>([])
    private let running = Atomic<Bool>(false)
    /// Processing one item longer than this hands the input to a new thread.
    let threshold: UInt64
    /// At most this many stalled threads at once; past it, input waits.
    let maxStalled: Int
    private let stalled = Atomic<Int>(0)

    init(threshold: UInt64 = 50_000_000, maxStalled: Int = 64) {
        self.threshold = threshold
        self.maxStalled = maxStalled
    }

    func watch(_ loop: any StallWatchable) { loops.withLock { $0.append(loop) } }
    func forget(_ loop: any StallWatchable) { loops.withLock { $0.removeAll { $0 === loop } } }
    func stalledThreadReturned() { stalled.subtract(1, ordering: .relaxed) }

    /// Hands `loop`'s input to a new thread if its item has stalled, even
    /// past `maxStalled`: how a stop gets the input back when every thread
    /// the cap allows is stuck in an in-process handler that never returns
    /// (the new thread only reads on to the stop, and runs nothing).
    func relieve(_ loop: any StallWatchable) {
        if loop.handOffIfStalled(now: MonotonicClock.now, threshold: threshold) {
            stalled.add(1, ordering: .relaxed)
        }
    }
    func stop() { running.store(false, ordering: .releasing) }

    func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Threads.detach { [self] in
            var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            while running.load(ordering: .acquiring) {
                nanosleep(&pause, nil)
                let now = MonotonicClock.now
                for loop in loops.withLock({ $0 }) where stalled.load(ordering: .relaxed) < maxStalled {
                    if loop.handOffIfStalled(now: now, threshold: threshold) {
                        stalled.add(1, ordering: .relaxed)
                    }
                }
            }
        }
    }
}
