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
    private let capture = ReplyCapture()

    private func request() -> NativeRequest {
        NativeRequest(RequestFields(url: "t://x-callback-url/t", scheme: "t", source: nil, parameters: [], arguments: []),
                      route: "t://x-callback-url/t")
    }

    private func call(id: UInt64 = 7, started: UInt64 = 100, owner: (any SynchronousCallOwner)? = nil) -> SynchronousCall {
        SynchronousCall(line: UnsafeBufferPointer(start: nil, count: 0), id: id, sequence: 0, sink: nil,
                        started: started, plugin: "lane", capture: capture, owner: owner)
    }

    private func open(_ table: ReplyTable, _ slot: inout SynchronousSlot?, call: SynchronousCall) throws -> (xcallback_reply, SynchronousSlot) {
        let ready = try #require(table.readySlot(&slot))
        let native = request()
        native.assign(id: call.id)
        return (table.openSynchronous(on: ready, request: native, call: call,
                                      name: table.callName(plugin: "lane", route: "t://x-callback-url/t")), ready)
    }

    private func neverPromoted(_ call: SynchronousCall) -> ReplyTable.Delivery {
        Issue.record("call \(call.id) promoted")
        return { _ in }
    }

    @Test("answered in place: the lane takes it, and a second completion is refused and named")
    func answeredInPlace() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try open(table, &slot, call: call())
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
        let (next, _) = try open(table, &slot, call: call(id: 8))
        #expect(next.token != reply.token)
        #expect(next.token & 0xFFFF_FFFF == reply.token & 0xFFFF_FFFF)
    }

    @Test("answered through `complete`: the lane takes the result when the handler returns")
    func answeredWithAResult() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        let (reply, ready) = try open(table, &slot, call: call())
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
        let (reply, ready) = try open(table, &slot, call: call())
        guard case .promoted = table.endSynchronous(reply, on: ready, promote: { _ in { recorder.record($0) } }) else {
            Issue.record("not promoted")
            return
        }
        #expect(table.pendingCount == 1)
        #expect(table.plugin(of: reply) == "lane")
        // The lane goes on with its next call while the first is pending.
        let (next, _) = try open(table, &slot, call: call(id: 8))
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
        let (reply, ready) = try open(table, &slot, call: call())
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
        let (running, ready) = try open(table, &slot, call: call(started: 100))
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

        let (answered, again) = try open(table, &slot, call: call(id: 8, started: 200))
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
        let (reply, ready) = try open(table, &slot, call: call(owner: owner))
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
        let (reply, _) = try open(table, &slot, call: call())
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
        let (last, ready) = try open(table, &slot, call: call())
        #expect(last.token >> 32 == UInt64(UInt32.max))
        _ = table.completeInPlace(last) { $0.captureCancel(); return true }
        _ = table.endSynchronous(last, on: ready, promote: neverPromoted)
        let (next, replacement) = try open(table, &slot, call: call(id: 8))
        #expect(replacement !== first)
        #expect(next.token & 0xFFFF_FFFF != last.token & 0xFFFF_FFFF)
        table.giveBack(first)
        #expect(table.takeSlot() !== first)
    }

    @Test("racing completions, a promoting timer and the lane's end: exactly one outcome per call")
    func racingParties() throws {
        let table = ReplyTable()
        var slot = table.takeSlot()
        for round in 0..<300 {
            let recorder = Recorder()
            let (reply, ready) = try open(table, &slot, call: call(id: UInt64(round), started: 1))
            let accepted = Lock(0)
            let timerAnswer = Lock<HandlerResult?>(nil)
            let laneEnd = Lock<ReplyTable.SynchronousEnd?>(nil)
            // Even rounds: the timer races the handler's completions, and the
            // lane ends after; odd rounds: the lane's end races them.
            DispatchQueue.concurrentPerform(iterations: 6) { party in
                switch party {
                case 0 where round.isMultiple(of: 2):
                    let answer = table.promoteSynchronous(reply, startedBefore: 1) { _ in { recorder.record($0) } }
                    if case .some(.some(let result)) = answer { timerAnswer.withLock { $0 = result } }
                case 0:
                    let end = table.endSynchronous(reply, on: ready) { _ in { recorder.record($0) } }
                    laneEnd.withLock { $0 = end }
                case 1:
                    _ = table.plugin(of: reply)
                    _ = table.describe(reply)
                default:
                    let done = party.isMultiple(of: 2)
                        ? table.completeInPlace(reply) { $0.captureCancel(); return true } == true
                        : table.complete(reply) { _, _ in .outcome(.cancel) } == nil
                    if done { accepted.withLock { $0 += 1 } }
                }
            }
            let end = laneEnd.withLock { $0 } ?? table.endSynchronous(reply, on: ready) { _ in { recorder.record($0) } }
            #expect(accepted.withLock { $0 } == 1, "round \(round)")
            var outcomes = recorder.results.count + (timerAnswer.withLock { $0 } == nil ? 0 : 1)
            switch end {
            case .completed, .completedInPlace: outcomes += 1
            case .promoted, .promotedEarlier: break
            }
            #expect(outcomes == 1, "round \(round): \(end), \(recorder.results)")
        }
    }
}
