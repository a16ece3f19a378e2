import Testing
@testable import XCallbackHost
@testable import XCallbackSystem
import XCallbackRouting
import XCallbackURL

/// `DeadlineTimer`: it answers a request once its deadline has passed and
/// never before, in deadline order, skips requests finished meanwhile, and
/// keeps doing so through many requests and its compaction. It reads the
/// monotonic clock itself (nothing to inject), so the tests give deadlines
/// in the past or far ahead, and wait on its own events (expiries and
/// ticks, which come at least every `resolution`) with bounded waits,
/// never on the time a quiet machine would take.
@Suite("Deadline timer")
struct DeadlineTimerTests {
    struct Expiry: Sendable, Equatable {
        var id: UInt64
        var deadline: UInt64
        var at: UInt64
    }

    /// A timer whose expiries and ticks are logged.
    final class Harness: Sendable {
        let expiries = EventLog<Expiry>()
        let ticks = EventLog<UInt64>()
        let timer: DeadlineTimer
        private let sink = OutputSink(receiver: Discard(), format: .url, tally: OutcomeTally())

        init(start: Bool = true) {
            timer = DeadlineTimer(onExpiry: { [expiries] request in
                expiries.append(Expiry(id: request.request.id, deadline: request.deadline, at: MonotonicClock.now))
            }, onTick: { [ticks] now in ticks.append(now) })
            if start { timer.start() }
        }

        deinit { timer.stop() }

        /// A pending request numbered `id`, due at `deadline` (monotonic ns).
        func request(_ id: UInt64, deadline: UInt64) -> PendingRequest {
            PendingRequest(id: id, sequence: id, input: "", url: RequestURL(scheme: "t"), urlText: "t://x", hop: 0,
                           sink: sink, deadline: deadline, table: RouteTable<RouteTarget>())
        }

        @discardableResult
        func add(_ id: UInt64, deadline: UInt64) -> PendingRequest {
            let pending = request(id, deadline: deadline)
            timer.add(pending)
            return pending
        }

        /// Waits (bounded) until `count` more ticks came than now: the timer
        /// then has looked at its queue at least that many times since.
        func waitForTicks(_ count: Int) async {
            let seen = ticks.count
            let after = await ticks.waitAsync { $0.count >= seen + count }
            #expect(after.count >= seen + count, "the timer stopped ticking")
        }
    }

    struct Discard: RecordReceiver {
        func receive(_ record: OutcomeRecord) {}
    }

    static let hour: UInt64 = 3_600_000_000_000
    static var now: UInt64 { MonotonicClock.now }

    @Test("a request whose deadline passed is answered; one whose deadline is ahead is not")
    func expiredOnly() async {
        let harness = Harness()
        let start = Self.now
        harness.add(1, deadline: start - 1)
        harness.add(2, deadline: start + Self.hour)
        let fired = await harness.expiries.waitAsync { !$0.isEmpty }
        #expect(fired.map(\.id) == [1])
        // Several more looks at the queue: still only the one.
        await harness.waitForTicks(4)
        #expect(harness.expiries.all.map(\.id) == [1])
    }

    @Test("requests are answered in deadline order, each at or after its deadline, each once")
    func inOrderNeverEarly() async {
        let harness = Harness()
        let base = Self.now
        for id in 0..<20 { harness.add(UInt64(id), deadline: base + UInt64(id) * 15_000_000) }
        let fired = await harness.expiries.waitAsync { $0.count >= 20 }
        #expect(fired.map(\.id) == (0..<20).map(UInt64.init))
        for expiry in fired { #expect(expiry.at >= expiry.deadline, "request \(expiry.id) answered early") }
        await harness.waitForTicks(2)
        #expect(harness.expiries.count == 20)
    }

    @Test("a request finished before its deadline (claimed by its answer) is never answered again")
    func finishedAreSkipped() async {
        // Started once the queue is built: on a loaded machine the timer
        // could otherwise take a request for due between its add and its
        // answer, and rightly answer it.
        let harness = Harness(start: false)
        let base = Self.now + 30_000_000
        var unfinished: [UInt64] = []
        for id in 0..<10 {
            let pending = harness.add(UInt64(id), deadline: base + UInt64(id))
            if id % 2 == 0 { #expect(pending.claim()) } else { unfinished.append(UInt64(id)) }
        }
        // The last in line: once it is answered, every one before it was looked at.
        harness.add(99, deadline: base + 1_000)
        harness.timer.start()
        let fired = await harness.expiries.waitAsync { $0.contains { $0.id == 99 } }
        #expect(fired.map(\.id) == unfinished + [99])
    }

    @Test("removeIfLast drops the newest entry only")
    func removeIfLast() async {
        let harness = Harness(start: false)
        let base = Self.now + 20_000_000
        let first = harness.add(1, deadline: base)
        let second = harness.add(2, deadline: base + 1)
        harness.timer.removeIfLast(first)  // not the newest: stays
        harness.timer.removeIfLast(second)  // the newest: gone (its caller had its answer)
        harness.add(3, deadline: base + 2)
        harness.timer.start()
        let fired = await harness.expiries.waitAsync { $0.contains { $0.id == 3 } }
        #expect(fired.map(\.id) == [1, 3])
    }

    @Test("a request added while the timer idles on an empty queue is still answered, with no wake-up call")
    func addedWhileIdle() async {
        let harness = Harness()
        await harness.waitForTicks(2)
        harness.add(7, deadline: Self.now)
        let fired = await harness.expiries.waitAsync { !$0.isEmpty }
        #expect(fired.map(\.id) == [7])
    }

    @Test("many requests, most finished, through the queue's compaction: each unfinished one answered once, in order")
    func manyWithCompaction() async {
        // Started once the queue is built (see `finishedAreSkipped`).
        let harness = Harness(start: false)
        // One timeout for all, as the dispatcher gives: deadlines in the
        // order of registration, all a little ahead.
        let base = Self.now + 50_000_000
        var unfinished: [UInt64] = []
        for id in 0..<6_000 {
            let pending = harness.add(UInt64(id), deadline: base + UInt64(id) * 1_000)
            // Two in three finish at once: the queue compacts as it grows.
            if id % 3 != 0 { #expect(pending.claim()) } else { unfinished.append(UInt64(id)) }
        }
        let expected = unfinished
        harness.timer.start()
        let fired = await harness.expiries.waitAsync(within: 60) { $0.count >= expected.count }
        #expect(fired.count == expected.count)
        #expect(fired.map(\.id) == expected)
        #expect(fired.allSatisfy { $0.at >= $0.deadline })
        await harness.waitForTicks(2)
        #expect(harness.expiries.count == expected.count)
    }

    @Test("a request added behind later deadlines is still answered in deadline order")
    func outOfOrderDeadline() async {
        // The dispatcher's requests share one timeout, but one the general
        // path adopts from a worker's lane (a decline, an error) or from a
        // fast call keeps the deadline of when it was first sent: earlier
        // than those of requests registered meanwhile. Here: registered
        // 1.9 s after a request whose deadline is 2 s away, sent at a time
        // that makes its own deadline 0.1 s away.
        let harness = Harness()
        let now = Self.now
        harness.add(1, deadline: now + 2_000_000_000)
        harness.add(2, deadline: now + 100_000_000)
        let fired = await harness.expiries.waitAsync(within: 30) { $0.count >= 2 }
        #expect(fired.map(\.id) == [2, 1], "answered in the order added, not by deadline")
        #expect(fired.allSatisfy { $0.at >= $0.deadline })
    }

    @Test("many requests added behind later ones (a stopped worker's lane expiring): deadline order, ties in the order added")
    func manyOutOfOrder() async {
        // Started once the queue is built: every deadline is past, so all
        // are answered on its first look, in the queue's order.
        let harness = Harness(start: false)
        let base = Self.now - Self.hour
        var expected: [(deadline: UInt64, id: UInt64)] = []
        func add(_ id: UInt64, _ deadline: UInt64) {
            harness.add(id, deadline: deadline)
            expected.append((deadline, id))
        }
        for id in 0..<500 { add(UInt64(id), base + 1_000 + UInt64(id)) }
        // Adopted ones, with older deadlines, some before every other entry.
        for id in 500..<700 { add(UInt64(id), base + UInt64(id - 500) * 5) }
        // Ties with entries already there: after them.
        for id in 700..<710 { add(UInt64(id), base + 1_250) }
        harness.timer.start()
        let count = expected.count
        let fired = await harness.expiries.waitAsync { $0.count >= count }
        let order = expected.enumerated().sorted { ($0.element.deadline, $0.offset) < ($1.element.deadline, $1.offset) }
        #expect(fired.map(\.id) == order.map(\.element.id))
    }

    @Test("expireAll answers every unfinished request at once, whatever its deadline, and empties the queue")
    func expireAll() async {
        let harness = Harness(start: false)
        let later = Self.now + Self.hour
        harness.add(1, deadline: later)
        #expect(harness.add(2, deadline: later).claim())
        harness.add(3, deadline: later + 1)
        // Synchronous, on the calling thread: nothing to wait for.
        harness.timer.expireAll()
        #expect(harness.expiries.all.map(\.id) == [1, 3])
        harness.timer.expireAll()
        #expect(harness.expiries.count == 2)
        // Started now, it finds nothing left to answer.
        harness.timer.start()
        await harness.waitForTicks(3)
        #expect(harness.expiries.count == 2)
    }

    @Test("onTick keeps coming with the time, queue empty or not")
    func ticks() async {
        let harness = Harness()
        await harness.waitForTicks(3)
        harness.add(1, deadline: Self.now + Self.hour)
        await harness.waitForTicks(3)
        let times = harness.ticks.all
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(harness.expiries.count == 0)
    }
}
