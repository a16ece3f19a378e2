import CXCallback
import Dispatch
import Foundation
import Testing
@testable import XCallbackBridge
@testable import XCallbackSystem
import XCallbackURL

/// Red-team cases for the lanes' reply slots (`SynchronousSlot`): what the
/// log says of a second completion once the lane has moved on, and a
/// decline from another thread racing every other party.
@Suite("Synchronous reply slots, adversarial", .ownThreads)
struct SynchronousSlotRaceTests {
    private let lane = LaneCalls()

    /// A completion of `reply` (request 7 of plug-in 'lane') after its call
    /// ended is refused, and the log can still say which call it was.
    private func expectRefusedNamingTheCall(_ reply: xcallback_reply, in table: ReplyTable,
                                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .alreadyCompleted, sourceLocation: sourceLocation)
        #expect(table.describe(reply) == "plug-in 'lane' completed request 7 (route t://x-callback-url/t)",
                sourceLocation: sourceLocation)
    }

    @Test("a second completion once the lane has ended the call still names it",
          arguments: [true, false])
    func secondCompletionAfterTheLaneEnded(inPlace: Bool) throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try lane.open(table, &slot, call: lane.call())
        if inPlace {
            #expect(table.completeInPlace(reply) { $0.captureCancel(); return true } == true)
        } else {
            #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == nil)
        }
        _ = table.endSynchronous(reply, on: ready) { _ in { _ in } }
        // The handler returned; a thread it left behind completes again.
        expectRefusedNamingTheCall(reply, in: table)
        // And after the lane's next call on the same slot.
        let (next, again) = try lane.open(table, &slot, call: lane.call(id: 8))
        _ = table.completeInPlace(next) { $0.captureCancel(); return true }
        _ = table.endSynchronous(next, on: again) { _ in { _ in } }
        expectRefusedNamingTheCall(reply, in: table)
    }

    @Test("the timer handing out an answer: a second completion still names the call")
    func secondCompletionAfterTheTimerAnswered() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try lane.open(table, &slot, call: lane.call(started: 1))
        #expect(table.completeInPlace(reply) { $0.captureCancel(); return true } == true)
        #expect(table.promoteSynchronous(reply, startedBefore: 1) { _ in { _ in } } == .some(.outcome(.cancel)))
        _ = table.endSynchronous(reply, on: ready) { _ in { _ in } }
        expectRefusedNamingTheCall(reply, in: table)
    }

    @Test("a lane gone while its call is promoted: its slot serves the next lane, and the old token its own call")
    func slotHandedOnWhileACallIsPromoted() throws {
        let table = ReplyTable()
        var first = table.takeSlot()
        let kept = Recorder()
        let (old, ready) = try lane.open(table, &first, call: lane.call(id: 1))
        guard case .promoted = table.endSynchronous(old, on: ready, promote: { _ in { kept.record($0) } }) else {
            Issue.record("not promoted")
            return
        }
        // The lane goes; the next lane is handed the same slot.
        table.giveBack(ready)
        var second = table.takeSlot()
        #expect(second === ready)
        let (new, again) = try lane.open(table, &second, call: lane.call(id: 2))
        #expect(new.token != old.token)
        #expect(table.plugin(of: old) == "lane")
        #expect(table.complete(old) { _, _ in .outcome(.cancel) } == nil)
        #expect(kept.results == [.outcome(.cancel)])
        // The new lane's call is untouched by it.
        #expect(table.completeInPlace(new) { $0.captureCancel(); return true } == true)
        guard case .completedInPlace = table.endSynchronous(new, on: again, promote: { _ in { _ in } }) else {
            Issue.record("the new lane's call was disturbed")
            return
        }
        #expect(table.complete(old) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        #expect(table.pendingCount == 0)
    }

    @Test("threads hammering an answered token with completions and log look-ups do not hold the lane's end off",
          .timeLimit(.minutes(1)))
    func hammeredAnsweredToken() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        for round in 0..<20 {
            let (reply, ready) = try lane.open(table, &slot, call: lane.call(id: UInt64(round)))
            #expect(table.completeInPlace(reply) { $0.captureCancel(); return true } == true)
            let stop = Lock(false)
            let refused = Lock(0)
            let group = DispatchGroup()
            for _ in 0..<3 {
                DispatchQueue.global().async(group: group) {
                    while !stop.withLock({ $0 }) {
                        if table.complete(reply, with: { _, _ in .outcome(.cancel) }) == .alreadyCompleted {
                            refused.withLock { $0 += 1 }
                        }
                        _ = table.describe(reply)
                        _ = table.plugin(of: reply)
                    }
                }
            }
            while refused.withLock({ $0 }) < 10 { sched_yield() }
            let started = MonotonicClock.now
            let end = table.endSynchronous(reply, on: ready) { _ in { _ in } }
            let waited = MonotonicClock.now - started
            stop.withLock { $0 = true }
            #expect(group.wait(timeout: .now() + 10) == .success)
            guard case .completedInPlace = end else {
                Issue.record("round \(round): \(end)")
                return
            }
            #expect(waited < 1_000_000_000, "round \(round): the lane waited \(waited) ns")
        }
    }

    @Test("every slot taken: the next lane gets none (and takes the general path); a slot given back serves again",
          .timeLimit(.minutes(1)))
    func exhaustedSlots() throws {
        let table = ReplyTable()
        var taken: [SynchronousSlot] = []
        taken.reserveCapacity(SynchronousSlotTable.chunkSize * SynchronousSlotTable.chunkCount)
        while let slot = table.takeSlot() { taken.append(slot) }
        #expect(taken.count == SynchronousSlotTable.chunkSize * SynchronousSlotTable.chunkCount)
        var none: SynchronousSlot? = nil
        #expect(table.readySlot(&none) == nil)
        // The last slot's token is the highest a lane can hand out.
        var last: SynchronousSlot? = taken.last
        let (reply, ready) = try lane.open(table, &last, call: lane.call())
        #expect(reply.token & 0x7FFF_FFFF == UInt64(taken.count - 1))
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == nil)
        guard case .completed = table.endSynchronous(reply, on: ready, promote: { _ in { _ in } }) else {
            Issue.record("not completed")
            return
        }
        // Past the last slot: refused, never read.
        let beyond = xcallback_reply(token: 1 << 32 | ReplyTable.slotBit | UInt64(taken.count))
        #expect(table.complete(beyond) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        table.giveBack(taken[17])
        var again = table.takeSlot()
        #expect(again === taken[17])
        let (next, _) = try lane.open(table, &again, call: lane.call(id: 8))
        #expect(table.completeInPlace(next) { $0.captureCancel(); return true } == true)
    }

    /// Takes a declined call over as the dispatcher does, counting outcomes.
    private final class Owner: SynchronousCallOwner {
        let recorder = Recorder()
        func takeOver(_ call: SynchronousCall, reply: xcallback_reply) -> ReplyTable.Delivery {
            { [recorder] in recorder.record($0) }
        }
    }

    /// The race of every party (with `SynchronousSlotTests`' single steps):
    /// in even rounds the timer races the handler's completions and
    /// declines, and the lane ends after; in odd rounds the lane's end does.
    @Test("completions and declines from other threads, the timer, scrapes and the lane's end: one outcome",
          .timeLimit(.minutes(2)))
    func racingDecline() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        for round in 0..<400 {
            let owner = Owner()
            let promoted = Recorder()
            let (reply, ready) = try lane.open(table, &slot, call: lane.call(id: UInt64(round), started: 1, owner: owner))
            let accepted = Lock(0)
            let timerAnswer = Lock<HandlerResult?>(nil)
            let laneEnd = Lock<ReplyTable.SynchronousEnd?>(nil)
            DispatchQueue.concurrentPerform(iterations: 6) { party in
                switch party {
                case 0 where round.isMultiple(of: 2):
                    let answer = table.promoteSynchronous(reply, startedBefore: 1) { _ in { promoted.record($0) } }
                    if case .some(.some(let result)) = answer { timerAnswer.withLock { $0 = result } }
                case 0:
                    let end = table.endSynchronous(reply, on: ready) { _ in { promoted.record($0) } }
                    laneEnd.withLock { $0 = end }
                case 1:
                    _ = table.plugin(of: reply)
                    _ = table.describe(reply)
                case 2, 3:
                    if table.complete(reply, with: { _, _ in .declined }) == nil { accepted.withLock { $0 += 1 } }
                default:
                    let done = party.isMultiple(of: 2)
                        ? table.completeInPlace(reply) { $0.captureCancel(); return true } == true
                        : table.complete(reply) { _, _ in .outcome(.cancel) } == nil
                    if done { accepted.withLock { $0 += 1 } }
                }
            }
            let end = laneEnd.withLock { $0 } ?? table.endSynchronous(reply, on: ready) { _ in { promoted.record($0) } }
            #expect(accepted.withLock { $0 } == 1, "round \(round)")
            var outcomes = owner.recorder.results.count + promoted.results.count
                + (timerAnswer.withLock { $0 } == nil ? 0 : 1)
            switch end {
            case .completed, .completedInPlace: outcomes += 1
            case .promoted, .promotedEarlier: break
            }
            #expect(outcomes == 1, "round \(round): \(end), \(owner.recorder.results), \(promoted.results)")
            #expect(table.pendingCount == 0, "round \(round)")
        }
    }
}
