import Testing
@testable import XCallbackHost
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `StallWatchdog` and the loop it relieves (`HandoffLoop`): an item
/// processed past the threshold has the input handed to a fresh thread,
/// exactly once, and every item is still processed once; an item waiting
/// for a reader gets `readerPatience` instead; at most `maxStalled` threads
/// are stalled at once. The hand-off decision is driven with explicit
/// clock values (`handOffIfStalled(now:threshold:)`), the threads with
/// gates the tests open.
@Suite("Stall watchdog")
struct StallWatchdogTests {
    /// A loop that records the watchdog's looks and answers as told.
    final class FakeLoop: StallWatchable {
        let looks = EventLog<(now: UInt64, threshold: UInt64)>()
        let handsOff: Bool

        init(handsOff: Bool) { self.handsOff = handsOff }

        func handOffIfStalled(now: UInt64, threshold: UInt64) -> Bool {
            looks.append((now, threshold))
            return handsOff
        }
    }

    /// A gate threads wait at until the test opens it (bounded).
    final class Gate: Sendable {
        private let open = ConditionLock(false)

        func pass(within seconds: Double = 60) {
            open.wait(until: { $0 }, deadline: MonotonicClock.now + UInt64(seconds * 1e9)) { _ in }
        }

        func openUp() {
            open.withLock { $0 = true }
            open.broadcast()
        }
    }

    /// Items 0..<count, read one by one (by whichever thread owns the input).
    final class Items: Sendable {
        private let next = Lock(0)
        let count: Int

        init(_ count: Int) { self.count = count }

        func read() -> Int? {
            next.withLock { next -> Int? in
                guard next < count else { return nil }
                defer { next += 1 }
                return next
            }
        }
    }

    // MARK: the watchdog

    @Test("the watchdog looks at every watched loop with its threshold, and stops looking at a forgotten one")
    func looksAtWatchedLoops() async {
        let watchdog = StallWatchdog(threshold: 1_234_567)
        defer { watchdog.stop() }
        let first = FakeLoop(handsOff: false)
        let second = FakeLoop(handsOff: false)
        watchdog.watch(first)
        watchdog.start()
        watchdog.start()  // a second start is a no-op
        let looks = await first.looks.waitAsync { $0.count >= 3 }
        #expect(looks.count >= 3)
        #expect(looks.allSatisfy { $0.threshold == 1_234_567 })
        #expect(zip(looks, looks.dropFirst()).allSatisfy { $0.now <= $1.now })

        watchdog.forget(first)
        let before = first.looks.count
        watchdog.watch(second)
        _ = await second.looks.waitAsync { $0.count >= 3 }
        #expect(second.looks.count >= 3)
        // A look already under way when it was forgotten may still land.
        #expect(first.looks.count <= before + 1)
    }

    @Test("at most maxStalled hand-offs at once; a stalled thread that returns frees a place")
    func maxStalled() async {
        let watchdog = StallWatchdog(threshold: 1, maxStalled: 2)
        defer { watchdog.stop() }
        let loop = FakeLoop(handsOff: true)
        watchdog.watch(loop)
        watchdog.start()
        _ = await loop.looks.waitAsync { $0.count >= 2 }
        #expect(loop.looks.count == 2)
        // A sentinel loop shows the watchdog keeps running meanwhile: with
        // two stalled it looks at no loop at all, so it too sees nothing.
        let sentinel = FakeLoop(handsOff: false)
        watchdog.watch(sentinel)
        let idle = await sentinel.looks.waitAsync(within: 0.3) { !$0.isEmpty }
        #expect(idle.isEmpty && loop.looks.count == 2, "looked at loops with maxStalled threads stalled")

        watchdog.stalledThreadReturned()
        _ = await loop.looks.waitAsync { $0.count >= 3 }
        #expect(loop.looks.count == 3)
    }

    // MARK: the decision, with explicit clock values

    @Test("an idle loop is never handed off; a busy one only past the threshold, measured from its stamp")
    func handOffDecision() async {
        let ended = Gate()
        let loop = HandoffLoop<Int>(read: { ended.openUp(); return nil }, process: { _ in }, watchdog: nil)
        #expect(!loop.handOffIfStalled(now: .max, threshold: 0), "idle (stamp 0) handed off")

        // An item began at `stamp` (odd, without the waiting bit, as `run` makes them).
        let stamp: UInt64 = 1_000_000_001
        let threshold: UInt64 = 50_000_000
        #expect(loop.pause(0, waiting: stamp))
        #expect(!loop.handOffIfStalled(now: stamp - 2, threshold: threshold), "an item begun after `now`")
        #expect(!loop.handOffIfStalled(now: stamp + threshold, threshold: threshold))
        #expect(loop.handOffIfStalled(now: stamp + threshold + 1, threshold: threshold))
        // Handed off: a second look, and the old owner, find it gone.
        #expect(!loop.handOffIfStalled(now: .max, threshold: threshold))
        #expect(!loop.resume(from: stamp, to: stamp + 2))
        #expect(!loop.pause(stamp, waiting: stamp | StallClock.waitingBit))
        // The fresh thread took the input (and found its end).
        let finished = await awaitOwnThread { loop.waitUntilInputEnds(deadline: MonotonicClock.now + 30_000_000_000) }
        #expect(finished == true)
    }

    @Test("an item waiting for a reader gets readerPatience, not the threshold; back to work, the threshold again")
    func readerPatience() async {
        let loop = HandoffLoop<Int>(read: { nil }, process: { _ in }, watchdog: nil)
        let threshold: UInt64 = 50_000_000
        let stamp: UInt64 = 5_000_000_001
        let waiting = stamp | StallClock.waitingBit
        #expect(loop.pause(0, waiting: stamp))
        // Paused for the reader: the threshold no longer applies.
        #expect(loop.pause(stamp, waiting: waiting))
        #expect(!loop.pause(stamp, waiting: waiting), "paused twice")
        #expect(!loop.handOffIfStalled(now: waiting + threshold + 1, threshold: threshold))
        #expect(!loop.handOffIfStalled(now: waiting + StallClock.readerPatience, threshold: threshold))
        // Resumed: the threshold counts from the new stamp.
        let resumed = ((waiting + 1_000_000) | 1) & ~StallClock.waitingBit
        #expect(loop.resume(from: waiting, to: resumed))
        #expect(!loop.handOffIfStalled(now: resumed + threshold, threshold: threshold))
        // Waiting again, past the patience: handed off.
        let waitingAgain = (resumed + 2) | StallClock.waitingBit
        #expect(loop.pause(resumed, waiting: waitingAgain))
        #expect(loop.handOffIfStalled(now: waitingAgain + StallClock.readerPatience + 1, threshold: threshold))
        #expect(!loop.resume(from: waitingAgain, to: waitingAgain + 2))
        let finished = await awaitOwnThread { loop.waitUntilInputEnds(deadline: MonotonicClock.now + 30_000_000_000) }
        #expect(finished == true)
    }

    // MARK: the loop under a real watchdog

    @Test("an item that stalls has the input handed to a new thread; every item is processed once")
    func stalledItemHandsOff() async {
        let gate = Gate()
        let items = Items(12)
        let processed = EventLog<(item: Int, thread: pthread_t)>()
        let watchdog = StallWatchdog(threshold: 20_000_000)
        defer { watchdog.stop() }
        let loop = HandoffLoop<Int>(read: items.read, process: { item in
            // Item 4 blocks until the test has seen items after it done
            // (bounded: the gate gives up after a minute).
            if item == 4 { gate.pass() }
            processed.append((item, pthread_self()))
        }, watchdog: watchdog)
        watchdog.start()
        loop.start()
        // Items past 4 complete while 4 is still stuck: another thread reads.
        let past = await processed.waitAsync { events in events.contains { $0.item == 11 } }
        #expect(past.contains { $0.item == 11 }, "the input was never handed off")
        #expect(!past.contains { $0.item == 4 }, "item 4 finished before its gate opened")
        gate.openUp()
        let all = await processed.waitAsync { $0.count >= 12 }
        #expect(all.map(\.item).sorted() == Array(0..<12))
        let ended = await awaitOwnThread { loop.waitUntilInputEnds(deadline: MonotonicClock.now + 30_000_000_000) }
        #expect(ended == true)
        // Items after 4 ran while its thread waited at the gate: elsewhere.
        // (Items before it may have moved too, on a loaded machine: a
        // thread preempted past the threshold is a stall like any other.)
        let thread = { (item: Int) in all.first { $0.item == item }!.thread }
        #expect((5..<12).allSatisfy { pthread_equal(thread($0), thread(4)) == 0 })
    }

    @Test("an item waiting with no patience (stdout's reader) is idle: never handed off while it waits")
    func waitingWithoutPatience() async {
        let gate = Gate()
        let started = Gate()
        let items = Items(3)
        let processed = EventLog<Int>()
        // Generous: only item 1's first microseconds, before it waits, run
        // on the threshold; a loaded machine must not preempt them past it
        // (at load 10 on 2 cores, 200 ms was seen to pass).
        let watchdog = StallWatchdog(threshold: 1_000_000_000)
        defer { watchdog.stop() }
        // How long item 1 took from its read (when the loop stamps it) to
        // its wait: past the threshold, the watchdog rightly took it for a
        // stall (a thread starved that long, as beside four CPU hogs in the
        // whole suite), and this run cannot judge.
        let readAt = EventLog<UInt64>()
        let reachedWait = EventLog<UInt64>()
        let loop = HandoffLoop<Int>(read: {
            let item = items.read()
            if item == 1 { readAt.append(MonotonicClock.now) }
            return item
        }, process: { item in
            if item == 1 {
                StallClock.whileWaitingForReader(patience: nil) {
                    reachedWait.append(MonotonicClock.now - (readAt.all.first ?? 0))
                    started.openUp()
                    gate.pass()
                }
            }
            processed.append(item)
        }, watchdog: watchdog)
        watchdog.start()
        loop.start()
        _ = await awaitOwnThread { started.pass() }
        // Many watchdog periods (20 ms each), three thresholds: had the item
        // counted as busy, item 2 would have been read by now.
        let early = await processed.waitAsync(within: 3) { $0.contains(2) }
        if let took = reachedWait.all.first, took < 500_000_000 {
            #expect(!early.contains(2), "the input was handed off while its item waited for a reader")
        }
        gate.openUp()
        let all = await processed.waitAsync { $0.count >= 3 }
        #expect(all == [0, 1, 2])
    }
}
