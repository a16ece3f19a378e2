import CXCallback
import Dispatch
import Foundation
import Testing
@testable import XCallbackBridge
@testable import XCallbackSystem
import XCallbackURL

/// A lane's synchronous calls in the `ReplyTable`: the one word each call's
/// parties move, driven as the lane, the handler, another thread and the
/// deadline timer drive it, one step at a time.
@Suite("Synchronous reply slots", .ownThreads)
struct SynchronousSlotTests {
    private let lane = LaneCalls()

    private func neverPromoted(_ call: SynchronousCall) -> ReplyTable.Delivery {
        Issue.record("call \(call.id) promoted")
        return { _ in }
    }

    @Test("answered in place: the lane takes it, and a second completion is refused and named")
    func answeredInPlace() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try lane.open(table, &slot, call: lane.call())
        #expect(reply.token & ReplyTable.slotBit != 0)
        #expect(table.completeInPlace(reply) { $0.captureCancel(); return true } == true)
        #expect(table.completeInPlace(reply) { $0.captureCancel(); return true } == nil)
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        #expect(table.describe(reply) == "plug-in 'lane' completed request 7 (route t://x-callback-url/t)")
        #expect(table.plugin(of: reply) == "lane")
        guard case .completedInPlace = table.endSynchronous(reply, on: ready, promote: neverPromoted) else {
            Issue.record("not completed in place")
            return
        }
        // Over: the token is dead, and the slot's next call has a new one.
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        #expect(table.plugin(of: reply) == nil)
        let (next, _) = try lane.open(table, &slot, call: lane.call(id: 8))
        #expect(next.token != reply.token)
        #expect(next.token & 0xFFFF_FFFF == reply.token & 0xFFFF_FFFF)
    }

    @Test("answered through `complete`: the lane takes the result when the handler returns")
    func answeredWithAResult() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try lane.open(table, &slot, call: lane.call())
        #expect(table.complete(reply) { plugin, _ in .outcome(.error(code: "E", message: "", domain: plugin)) } == nil)
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        guard case .completed(let result) = table.endSynchronous(reply, on: ready, promote: neverPromoted) else {
            Issue.record("not completed")
            return
        }
        #expect(result == .outcome(.error(code: "E", message: "", domain: "lane")))
    }

    @Test("kept past its return: promoted, completed once through the lane's token, expirable")
    func keptPastReturn() throws {
        let table = ReplyTable()
        let recorder = Recorder()
        var slot = table.takeSlot()
        let (reply, ready) = try lane.open(table, &slot, call: lane.call())
        guard case .promoted = table.endSynchronous(reply, on: ready, promote: { _ in { recorder.record($0) } }) else {
            Issue.record("not promoted")
            return
        }
        #expect(table.pendingCount == 1)
        #expect(table.plugin(of: reply) == "lane")
        // The lane goes on with its next call while the first is pending.
        let (next, _) = try lane.open(table, &slot, call: lane.call(id: 8))
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == nil)
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        #expect(table.describe(reply) == "plug-in 'lane' completed request 7 (route t://x-callback-url/t)")
        #expect(recorder.results == [.outcome(.cancel)])
        #expect(table.pendingCount == 0)
        #expect(table.completeInPlace(next) { $0.captureCancel(); return true } == true)
    }

    @Test("promoted, then past its Timeout: the late completion is refused as after a timeout")
    func promotedThenExpired() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try lane.open(table, &slot, call: lane.call())
        _ = table.endSynchronous(reply, on: ready) { _ in { _ in Issue.record("delivered after its Timeout") } }
        #expect(table.expire(reply))
        #expect(!table.expire(reply))
        #expect(table.pendingCount == 0)
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .afterTimeout(plugin: "lane"))
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
    }

    @Test("the timer: a young call is left alone; an old one is promoted, or its answer handed out")
    func timerPromotion() throws {
        let table = ReplyTable()
        let recorder = Recorder()
        var slot = table.takeSlot()
        let (running, ready) = try lane.open(table, &slot, call: lane.call(started: 100))
        #expect(table.promoteSynchronous(running, startedBefore: 99, promote: neverPromoted) == nil)
        let promoted = table.promoteSynchronous(running, startedBefore: 100) { _ in { recorder.record($0) } }
        #expect(promoted == .some(nil))
        #expect(table.promoteSynchronous(running, startedBefore: .max, promote: neverPromoted) == nil)
        // The handler answers after the timer took it: through the table.
        #expect(table.completeInPlace(running) { _ in Issue.record("captured"); return true } == nil)
        #expect(table.complete(running) { _, _ in .outcome(.cancel) } == nil)
        #expect(recorder.results == [.outcome(.cancel)])
        guard case .promotedEarlier = table.endSynchronous(running, on: ready, promote: neverPromoted) else {
            Issue.record("the lane did not find it promoted")
            return
        }

        let (answered, again) = try lane.open(table, &slot, call: lane.call(id: 8, started: 200))
        #expect(table.complete(answered) { _, _ in .outcome(.cancel) } == nil)
        #expect(table.promoteSynchronous(answered, startedBefore: 300) { _ in { _ in } } == .some(.outcome(.cancel)))
        guard case .promotedEarlier = table.endSynchronous(answered, on: again, promote: neverPromoted) else {
            Issue.record("the lane did not find it promoted")
            return
        }
    }

    @Test("a decline while the handler runs is handed to the owner at once")
    func declineWhileRunning() throws {
        final class Owner: SynchronousCallOwner {
            let recorder = Recorder()
            let taken = Lock<[UInt64]>([])
            func takeOver(_ call: SynchronousCall, reply: xcallback_reply) -> ReplyTable.Delivery {
                taken.withLock { $0.append(call.id) }
                return { [recorder] in recorder.record($0) }
            }
        }
        let owner = Owner()
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try lane.open(table, &slot, call: lane.call(owner: owner))
        #expect(table.complete(reply) { _, _ in .declined } == nil)
        #expect(owner.taken.withLock { $0 } == [7])
        #expect(owner.recorder.results == [.declined])
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
        guard case .promotedEarlier = table.endSynchronous(reply, on: ready, promote: neverPromoted) else {
            Issue.record("the lane did not find it handed over")
            return
        }
    }

    @Test("made-up lane tokens are refused")
    func madeUpTokens() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, _) = try lane.open(table, &slot, call: lane.call())
        for token in [reply.token &+ (1 << 32), reply.token &- (1 << 32), reply.token ^ 1, ReplyTable.slotBit | 0x7FFF_FFFF,
                      ReplyTable.slotBit] {
            let forged = xcallback_reply(token: token)
            #expect(table.completeInPlace(forged) { _ in Issue.record("captured"); return true } == nil)
            #expect(table.complete(forged) { _, _ in .outcome(.cancel) } == .alreadyCompleted)
            #expect(!table.expire(forged))
            #expect(table.plugin(of: forged) == nil)
        }
        #expect(table.complete(reply) { _, _ in .outcome(.cancel) } == nil)
    }

    @Test("a slot whose generations are spent is replaced, never reused")
    func spentSlot() throws {
        let table = ReplyTable(firstGeneration: UInt32.max - 1)
        var slot = table.takeSlot()
        let first = try #require(slot)
        let (last, ready) = try lane.open(table, &slot, call: lane.call())
        #expect(last.token >> 32 == UInt64(UInt32.max))
        _ = table.completeInPlace(last) { $0.captureCancel(); return true }
        _ = table.endSynchronous(last, on: ready, promote: neverPromoted)
        let (next, replacement) = try lane.open(table, &slot, call: lane.call(id: 8))
        #expect(replacement !== first)
        #expect(next.token & 0xFFFF_FFFF != last.token & 0xFFFF_FFFF)
        table.giveBack(first)
        #expect(table.takeSlot() !== first)
    }
}
