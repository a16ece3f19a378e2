import Testing
@testable import XCallbackBridge
@testable import XCallbackHost
import XCallbackMetrics
@testable import XCallbackSystem
import XCallbackURL
import XCallbackWire

/// `WorkerSlots`, the table of requests a worker's fast lane has out: a
/// slot per id (`id % capacity`), claimed by publishing the id, taken
/// exactly once by whoever gets there first (an answer, the deadline
/// timer, a worker's exit), and an answer for an id no longer in its slot
/// misses instead of misfiring. Driven directly, with no worker.
@Suite("Worker slots")
struct WorkerSlotsTests {
    /// The table calls its owner never; the lane's callers do.
    final class UnusedOwner: WorkerLaneOwner {
        func adopt(_ request: inout WorkerSlots.Request, started: UInt64, plugin: String,
                   counts: PluginMetrics?, shareSlot: Int) -> AdoptedRequest {
            Issue.record("WorkerSlots adopted a request by itself")
            return AdoptedRequest(call: HandlerCall { _ in },
                                  fields: RequestFields(url: "", scheme: "", source: nil, parameters: [], arguments: []),
                                  expire: {})
        }

        func watch(_ worker: WorkerProcess) { Issue.record("WorkerSlots watched a worker by itself") }

        func nextID() -> UInt64 {
            Issue.record("WorkerSlots numbered a request by itself")
            return 0
        }

        func end(_ answer: Ending, ofSlot request: inout WorkerSlots.Request, counts: Unmanaged<PluginMetrics>?,
                 sampler: LatencySampler, shareSlot: Int) {
            Issue.record("WorkerSlots ended a request by itself")
        }
    }

    static let capacity = UInt64(WorkerSlots.capacity)

    /// Fills and publishes the slot of `id`; false if it was not free.
    @discardableResult
    static func publish(_ slots: WorkerSlots, _ id: UInt64, started: UInt64 = 1, line: [UInt8]? = nil) -> Bool {
        guard let slot = slots.freeSlot(for: id) else { return false }
        slot.pointee.id = id
        slot.pointee.sequence = id &* 10
        slot.pointee.requestID = id &+ 1_000
        slot.pointee.handler = Int(id % 5)
        slot.pointee.frame = frame(id, line: line ?? Array("t://x-callback-url/r?id=\(id)".utf8))
        slots.publish(id, started: started)
        return true
    }

    /// The request frame a lane sends for `line`, as its slot keeps it.
    static func frame(_ id: UInt64, line: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = []
        var parsed = RequestLine()
        let written = line.withUnsafeBufferPointer { line in
            parsed.parse(line)
                && RequestFrame.writeLine(id: id, handler: 0, line: line, parsed: &parsed, requestID: { id }, into: &frame)
        }
        precondition(written)
        return frame
    }

    /// What `take` saw: the slot's id, sequence, and whether its handler returned.
    static func take(_ slots: WorkerSlots, _ id: UInt64) -> (id: UInt64, sequence: UInt64, returned: Bool)? {
        slots.take(id) { request, returned in (request.id, request.sequence, returned) }
    }

    @Test("the capacity is the input's window, a power of two (slot = id masked)")
    func capacity() {
        #expect(WorkerSlots.capacity == Int(InputLoop.maxInFlight))
        #expect(WorkerSlots.capacity > 0 && WorkerSlots.capacity & (WorkerSlots.capacity - 1) == 0)
    }

    @Test("a slot is claimed by publishing its id, taken once, then free again")
    func claimTakeRelease() {
        let slots = WorkerSlots(owner: UnusedOwner())
        #expect(slots.isEmpty)
        #expect(Self.publish(slots, 1, started: 500))
        #expect(!slots.isEmpty)
        #expect(slots.started(1) == 500)
        // Busy: neither its id nor the id a window later may use it.
        #expect(slots.freeSlot(for: 1) == nil)
        #expect(slots.freeSlot(for: 1 + Self.capacity) == nil)
        #expect(slots.freeSlot(for: 2) != nil)

        let taken = slots.take(1) { request, returned in
            (request.id, request.sequence, request.requestID, request.handler, request.withLine { String(decoding: $0, as: UTF8.self) }, returned)
        }
        #expect(taken?.0 == 1 && taken?.1 == 10 && taken?.2 == 1_001 && taken?.3 == 1)
        #expect(taken?.4 == "t://x-callback-url/r?id=1" && taken?.5 == false)
        #expect(Self.take(slots, 1) == nil, "taken twice")
        #expect(slots.isEmpty)
        #expect(slots.freeSlot(for: 1 + Self.capacity) != nil)
    }

    @Test("every id of a window has a slot of its own; past the window an id waits for its slot alone")
    func fullWindow() {
        let slots = WorkerSlots(owner: UnusedOwner())
        let first: UInt64 = 77
        for id in first..<(first + Self.capacity) { #expect(Self.publish(slots, id), "id \(id)") }
        for id in (first + Self.capacity)..<(first + 2 * Self.capacity) where slots.freeSlot(for: id) != nil {
            Issue.record("id \(id) found a free slot in a full table")
        }
        #expect(Self.take(slots, first + 5)?.id == first + 5)
        #expect(slots.freeSlot(for: first + 5 + Self.capacity) != nil)
        #expect(slots.freeSlot(for: first + 6 + Self.capacity) == nil)
        #expect(!slots.isEmpty)
        #expect(slots.takeAll(startedBefore: .max) { request, _ in request.id }.count == Int(Self.capacity) - 1)
        #expect(slots.isEmpty)
    }

    @Test("an answer for a request no longer in its slot misses: taken by the timer, or the slot reused since")
    func staleIDsMiss() {
        let slots = WorkerSlots(owner: UnusedOwner())
        Self.publish(slots, 3)
        #expect(Self.take(slots, 3) != nil)  // the timer took it
        #expect(Self.take(slots, 3) == nil)  // the late answer misses
        #expect(!slots.markReturned(3))
        // The slot holds a newer request now: the old id still misses it.
        let newer = 3 + Self.capacity
        Self.publish(slots, newer)
        #expect(Self.take(slots, 3) == nil)
        #expect(!slots.markReturned(3))
        #expect(!slots.unpublish(3))
        #expect(Self.take(slots, newer)?.id == newer)
        // An id never sent misses a free slot as well.
        #expect(Self.take(slots, 9) == nil)
        #expect(!slots.markReturned(9))
        #expect(slots.isEmpty)
    }

    @Test("markReturned marks the id out once; take then says its handler returned")
    func markReturned() {
        let slots = WorkerSlots(owner: UnusedOwner())
        Self.publish(slots, 11)
        Self.publish(slots, 12)
        #expect(slots.markReturned(11))
        #expect(!slots.markReturned(11), "marked twice")
        #expect(Self.take(slots, 11)?.returned == true)
        #expect(Self.take(slots, 12)?.returned == false)
        #expect(!slots.markReturned(11))
    }

    @Test("unpublish takes back a slot nobody took, and fails once one did")
    func unpublish() {
        let slots = WorkerSlots(owner: UnusedOwner())
        Self.publish(slots, 21)
        #expect(slots.unpublish(21))
        #expect(slots.isEmpty)
        #expect(slots.freeSlot(for: 21) != nil)
        #expect(!slots.unpublish(21))
        Self.publish(slots, 21)
        #expect(Self.take(slots, 21) != nil)
        #expect(!slots.unpublish(21))
        #expect(slots.isEmpty)
    }

    @Test("takeAll takes the requests sent before the cutoff, in id order across the table's wrap; .max takes the rest")
    func takeAllByAge() {
        let slots = WorkerSlots(owner: UnusedOwner())
        // Ids across the end of the table: slot order is not id order.
        let ids = (Self.capacity - 4)...(Self.capacity + 5)
        for id in ids { Self.publish(slots, id, started: 1_000 + (id % 3) * 100) }
        #expect(slots.markReturned(Self.capacity))
        let old = slots.takeAll(startedBefore: 1_150) { request, returned in (request.id, returned) }
        #expect(old.map(\.0) == ids.filter { $0 % 3 != 2 })
        #expect(old.filter(\.1).map(\.0) == [Self.capacity])
        let rest = slots.takeAll(startedBefore: .max) { request, _ in request.id }
        #expect(rest == ids.filter { $0 % 3 == 2 })
        #expect(slots.isEmpty)
        #expect(slots.takeAll(startedBefore: .max) { request, _ in request.id } == [])
    }

    @Test("a long line's room is given back when its slot is taken; a short one's is kept for the next")
    func longLinesAreNotKept() {
        let slots = WorkerSlots(owner: UnusedOwner())
        Self.publish(slots, 1, line: Array("t://x-callback-url/r?a=".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 100_000))
        _ = Self.take(slots, 1)
        #expect(slots.freeSlot(for: 1 + Self.capacity)?.pointee.frame.capacity == 0)
        Self.publish(slots, 2, line: Array("t://x-callback-url/r?b=".utf8) + [UInt8](repeating: UInt8(ascii: "b"), count: 100))
        _ = Self.take(slots, 2)
        #expect((slots.freeSlot(for: 2 + Self.capacity)?.pointee.frame.capacity ?? 0) >= 100)
    }

    @Test("threads racing for the same requests (answers, the timer, an exit scan): each is taken exactly once")
    func racingTakers() async {
        let rounds = 20
        let counts = await awaitOwnThread { () -> [Int] in
            let slots = WorkerSlots(owner: UnusedOwner())
            let takenTimes = Lock([Int](repeating: 0, count: rounds * Int(Self.capacity)))
            for round in 0..<rounds {
                let ids = (UInt64(round) * Self.capacity + 1)...(UInt64(round + 1) * Self.capacity)
                for id in ids { precondition(Self.publish(slots, id)) }
                let done = ConditionLock(0)
                func racer(_ body: @escaping @Sendable () -> Void) {
                    Threads.detach {
                        body()
                        done.withLock { $0 += 1 }
                        done.broadcast()
                    }
                }
                let record: @Sendable (UInt64) -> Void = { id in takenTimes.withLock { $0[Int(id) - 1] += 1 } }
                // Two reply threads, one forwards and one backwards.
                racer { for id in ids { if let taken = Self.take(slots, id) { record(taken.id) } } }
                racer { for id in ids.reversed() { if let taken = Self.take(slots, id) { record(taken.id) } } }
                // The worker says handlers returned meanwhile.
                racer { for id in ids { _ = slots.markReturned(id) } }
                // The timer, or the exit scan: everything at once.
                racer { for id in slots.takeAll(startedBefore: .max, { request, _ in request.id }) { record(id) } }
                done.wait(until: { $0 == 4 }) { _ in }
                // What no racer took (none, or a few the scan missed while
                // a reply thread held them) is taken now, once.
                for id in slots.takeAll(startedBefore: .max, { request, _ in request.id }) { record(id) }
                precondition(slots.isEmpty)
            }
            return takenTimes.withLock { $0 }
        }
        #expect(counts?.count == rounds * Int(Self.capacity))
        #expect(counts?.allSatisfy { $0 == 1 } == true, "a request taken twice, or never")
    }

    @Test("the callback an answer goes to: the request's own for its kind, none when absent or empty")
    func callbackForKind() {
        var request = WorkerSlots.Request()
        request.callbacks = Array("SSSEECCCC".utf8)
        (request.successCount, request.errorCount, request.cancelCount) = (3, 2, 4)
        func callback(_ kind: OutcomeKind) -> String? {
            request.callbacks.withUnsafeBufferPointer { bytes in
                WorkerSlots.NamedCallbacks(request).callback(for: kind, in: bytes).map { String(decoding: $0, as: UTF8.self) }
            }
        }
        #expect(callback(.success) == "SSS" && callback(.error) == "EE" && callback(.cancel) == "CCCC")
        // No x-success (-1) and an empty x-error (0): the cancel's bytes start at 0.
        request.callbacks = Array("CC".utf8)
        (request.successCount, request.errorCount, request.cancelCount) = (-1, 0, 2)
        #expect(callback(.success) == nil && callback(.error) == nil && callback(.cancel) == "CC")
        request.callbacks = Array("EE".utf8)
        (request.successCount, request.errorCount, request.cancelCount) = (-1, 2, -1)
        #expect(callback(.success) == nil && callback(.error) == "EE" && callback(.cancel) == nil)
    }

    @Test("a worker's slots are made once: the first stored wins, the loser is released")
    func lazySlots() {
        let lazy = LazySlots()
        #expect(lazy.load() == nil)
        let first = WorkerSlots(owner: UnusedOwner())
        weak var second: WorkerSlots?
        do {
            let made = WorkerSlots(owner: UnusedOwner())
            second = made
            #expect(lazy.storeIfNil(first) === first)
            #expect(lazy.storeIfNil(made) === first)
        }
        #expect(lazy.load() === first)
        #expect(second == nil, "the slots that lost the race leaked")
    }
}
