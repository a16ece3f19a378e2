import Synchronization

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
    // input (ownership moves under `state`'s lock); the rest is locked.
    private let read: () -> Item?
    private let process: (Item) -> Void
    private let watchdog: StallWatchdog?
    private let state = Lock(State())
    private let finished = ConditionLock(false)

    private struct State {
        var owner = 0
        var busySince: UInt64?
    }

    /// `read` returns nil at the end of input; it must flush deferred
    /// writes (`BatchingThread.flushDeferred`) before it blocks.
    init(read: @escaping () -> Item?, process: @escaping (Item) -> Void, watchdog: StallWatchdog?) {
        self.read = read
        self.process = process
        self.watchdog = watchdog
    }

    /// Starts reading on a new thread.
    func start() {
        watchdog?.watch(self)
        Threads.detach { [self] in run(as: 0) }
    }

    /// Waits until the input ends.
    func waitUntilInputEnds() {
        finished.wait(until: { $0 }) { _ in }
    }

    private func run(as owner: Int) {
        BatchingThread.markCurrent()
        while let item = read() {
            state.withLock { $0.busySince = MonotonicClock.now }
            process(item)
            let stillOwner = state.withLock { state -> Bool in
                guard state.owner == owner else { return false }
                state.busySince = nil
                return true
            }
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

    func handOffIfStalled(now: UInt64, threshold: UInt64) -> Bool {
        let newOwner = state.withLock { state -> Int? in
            // `now` was read before this lock: an item that began after it
            // has not been busy at all (and `&-` would wrap to a huge age).
            guard let since = state.busySince, now > since, now - since > threshold else { return nil }
            state.owner += 1
            state.busySince = nil
            return state.owner
        }
        guard let newOwner else { return false }
        Threads.detach { [self] in run(as: newOwner) }
        return true
    }
}

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
