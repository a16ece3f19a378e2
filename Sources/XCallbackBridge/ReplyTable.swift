#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CXCallback
import XCallbackSystem

/// Maps the `xcallback_reply` tokens handed to plug-ins to the requests
/// waiting for them, and enforces exactly-once completion.
///
/// A token is a generational index (slot in the low 32 bits, the slot's
/// generation in the high 32), never a pointer: a second completion, a
/// completion after a timeout, or a made-up token finds no live slot and is
/// refused, so a misbehaving plug-in cannot make the host touch freed memory.
///
/// A slot is opened in one of two ways. The general path gives it a
/// delivery closure, which a completion calls on its own thread. The fast
/// lane opens it *synchronous*: the dispatcher's thread is inside the
/// handler, so a completion only leaves its result in the slot, and the
/// dispatcher takes it when the handler returns (`endSynchronous`): no
/// closure, no object, no thread hand-off. A handler that keeps its token
/// past its return is *promoted* to the general path then, or by the
/// deadline timer while it runs (`promoteSynchronous`).
public final class ReplyTable: Sendable {
    public typealias Delivery = @Sendable (HandlerResult) -> Void

    /// Why a completion was refused.
    public enum Refusal: Error, Equatable {
        /// The token was completed before (or never existed).
        case alreadyCompleted
        /// The host had already answered `Timeout`; the late result is dropped.
        case afterTimeout(plugin: String)
    }

    /// How a synchronous slot ended, as the fast lane learns it.
    public enum SynchronousEnd {
        /// Completed while the handler ran: the slot is free again.
        case completed(HandlerResult)
        /// Still pending when the handler returned: handed to the general
        /// path with the delivery `promote` gave.
        case promoted
        /// Completed while the handler ran, the answer kept in the call's
        /// `ReplyCapture`: the slot is free again.
        case completedInPlace
        /// The deadline timer promoted it while the handler ran.
        case promotedEarlier
    }

    private enum Mode {
        case deliver(Delivery)
        case synchronous(SynchronousCall)
        case completed(HandlerResult, SynchronousCall)
        case completedInPlace(SynchronousCall)
    }

    private struct Slot {
        var generation: UInt32 = 0
        /// Whether `entry` is there: a plain field `liveIndex` can read
        /// without copying (retaining) the entry.
        var occupied = false
        var entry: Entry?
    }

    private struct Entry {
        var request: NativeRequest
        var plugin: String
        var mode: Mode
    }

    /// A token completed once, for the log line of a second completion.
    private struct Completion {
        var token: UInt64
        var requestID: UInt64
        var plugin: String
        var route: String
    }

    private struct Storage {
        var slots: [Slot] = []
        var free: [UInt32] = []
        /// Requests answered `Timeout` whose handler may still be reading
        /// them: kept alive until the plug-in completes them, however late.
        var expired: [UInt64: (request: NativeRequest, plugin: String)] = [:]
        /// How many of `expired` each plug-in holds.
        var expiredByPlugin: [String: Int] = [:]
        /// The last completions (values only, no request kept alive), so a
        /// second completion can be logged with the plug-in, the route and
        /// the request it was for.
        var recent = [Completion?](repeating: nil, count: ReplyTable.remembered)
        var recentNext = 0
    }

    /// How many completions are remembered (a bounded ring).
    public static let remembered = 256

    private let storage = Lock(Storage())
    /// The generation a new slot starts at: 0, but for a test of the wrap.
    private let firstGeneration: UInt32

    public init() { firstGeneration = 0 }

    init(firstGeneration: UInt32) { self.firstGeneration = firstGeneration }

    /// Registers a pending handler call and returns its token.
    public func open(request: NativeRequest, plugin: String, deliver: @escaping Delivery) -> xcallback_reply {
        open(Entry(request: request, plugin: plugin, mode: .deliver(deliver)))
    }

    /// Registers a call the caller's thread is about to make (the fast
    /// lane); end it with `endSynchronous` once the handler returns.
    public func openSynchronous(request: NativeRequest, plugin: String, call: SynchronousCall) -> xcallback_reply {
        open(Entry(request: request, plugin: plugin, mode: .synchronous(call)))
    }

    private func open(_ entry: Entry) -> xcallback_reply {
        let token = storage.withLock { storage -> UInt64 in
            let index: UInt32
            if let reused = storage.free.popLast() {
                index = reused
            } else {
                index = UInt32(storage.slots.count)
                storage.slots.append(Slot(generation: firstGeneration))
            }
            storage.slots[Int(index)].entry = entry
            storage.slots[Int(index)].occupied = true
            return UInt64(storage.slots[Int(index)].generation) << 32 | UInt64(index)
        }
        return xcallback_reply(token: token)
    }

    /// Completes a token: delivers `result` (on the caller's thread, or to
    /// the synchronous caller) and releases the slot. Returns the refusal
    /// when it was not pending.
    @discardableResult
    public func complete(_ reply: xcallback_reply, with result: (_ plugin: String, _ request: NativeRequest) -> HandlerResult) -> Refusal? {
        let taken = storage.withLock { storage -> Result<(Delivery, Entry)?, Refusal> in
            if let expired = storage.expired.removeValue(forKey: reply.token) {
                storage.expiredByPlugin[expired.plugin, default: 1] -= 1
                Self.remember(Completion(token: reply.token, requestID: expired.request.id,
                                         plugin: expired.plugin, route: expired.request.routeText), in: &storage)
                return .failure(.afterTimeout(plugin: expired.plugin))
            }
            guard let index = Self.liveIndex(reply.token, in: storage) else {
                return .failure(.alreadyCompleted)
            }
            let entry = storage.slots[index].entry!
            switch entry.mode {
            case .completed, .completedInPlace:
                return .failure(.alreadyCompleted)
            case .synchronous(let call):
                // Built under the lock: the dispatcher takes it when the
                // handler returns, and the timer may look before that.
                let answer = result(entry.plugin, entry.request)
                Self.remember(Self.completion(reply.token, entry), in: &storage)
                if answer == .declined, let owner = call.owner {
                    // The next route is tried now, as on the general path,
                    // not when (or if) this handler returns.
                    let deliver = owner.takeOver(call, reply: reply)
                    Self.release(index, in: &storage)
                    return .success((deliver, entry))
                }
                storage.slots[index].entry!.mode = .completed(answer, call)
                return .success(nil)
            case .deliver(let deliver):
                Self.remember(Self.completion(reply.token, entry), in: &storage)
                Self.release(index, in: &storage)
                return .success((deliver, entry))
            }
        }
        switch taken {
        case .success(let delivery):
            if let (deliver, entry) = delivery {
                // A taken-over decline was built under the lock already.
                if case .synchronous = entry.mode { deliver(.declined) } else { deliver(result(entry.plugin, entry.request)) }
            }
            return nil
        case .failure(let refusal):
            return refusal
        }
    }

    /// Completes a synchronous call in place: `capture` copies the answer
    /// into the call's `ReplyCapture`. Nil when the token is not such a call
    /// (the caller completes it with `complete`); false when `capture`
    /// declined (the caller does the same, and nothing has changed).
    public func completeInPlace(_ reply: xcallback_reply, _ capture: (ReplyCapture) -> Bool) -> Bool? {
        storage.withLock { storage -> Bool? in
            guard let index = Self.liveIndex(reply.token, in: storage) else { return nil }
            // Through the slot's address: the slot or its entry read as a
            // value is a copy, which retains (and then releases) everything
            // in it, on every request of the fast lane.
            let completed = storage.slots.withUnsafeMutableBufferPointer { slots -> Completion?? in
                let slot = slots.baseAddress! + index
                guard case .synchronous(let call) = slot.pointee.entry.unsafelyUnwrapped.mode else { return nil }
                guard capture(call.capture) else { return .some(nil) }
                slot.pointee.entry!.mode = .completedInPlace(call)
                let request = slot.pointee.entry.unsafelyUnwrapped.request
                return Completion(token: reply.token, requestID: request.id, plugin: call.plugin, route: request.routeText)
            }
            guard let completed else { return nil }
            guard let completed else { return false }
            Self.remember(completed, in: &storage)
            return true
        }
    }

    /// Ends a synchronous call once its handler has returned. A result left
    /// in the slot is returned and the slot freed; a call still pending is
    /// handed to the general path with the delivery `promote` builds (under
    /// the table's lock, so no completion can fall in between).
    public func endSynchronous(_ reply: xcallback_reply, promote: (SynchronousCall) -> Delivery) -> SynchronousEnd {
        storage.withLock { storage in
            guard let index = Self.liveIndex(reply.token, in: storage) else { return .promotedEarlier }
            switch storage.slots[index].entry!.mode {
            case .completed(let result, _):
                Self.release(index, in: &storage)
                return .completed(result)
            case .completedInPlace:
                Self.release(index, in: &storage)
                return .completedInPlace
            case .synchronous(let call):
                storage.slots[index].entry!.mode = .deliver(promote(call))
                return .promoted
            case .deliver:
                return .promotedEarlier
            }
        }
    }

    /// The deadline timer's side of a synchronous call that has run since
    /// before `cutoff`: hands it to the general path with the delivery
    /// `promote` builds, and returns the result it had already left, if
    /// any. Nil when the call has ended, is younger, or was promoted before.
    public func promoteSynchronous(_ reply: xcallback_reply, startedBefore cutoff: UInt64,
                            promote: (SynchronousCall) -> Delivery) -> HandlerResult?? {
        storage.withLock { storage -> HandlerResult?? in
            guard let index = Self.liveIndex(reply.token, in: storage) else { return nil }
            switch storage.slots[index].entry!.mode {
            case .synchronous(let call) where call.started <= cutoff:
                storage.slots[index].entry!.mode = .deliver(promote(call))
                return .some(nil)
            case .completed(let result, let call) where call.started <= cutoff:
                // Answered, but the handler has not returned for a whole
                // timeout: the outcome goes out now, as it would have on
                // the general path.
                _ = promote(call)
                Self.release(index, in: &storage)
                return .some(result)
            case .completedInPlace(let call) where call.started <= cutoff:
                _ = promote(call)
                Self.release(index, in: &storage)
                return .some(.outcome(call.capture.outcome))
            default:
                return nil
            }
        }
    }

    /// The host's side of a deadline: retires `reply` if it is still
    /// pending, without delivering anything (the dispatcher has answered
    /// `Timeout` already), and keeps the request alive for the handler that
    /// may still be reading it. Returns false when it had completed.
    @discardableResult
    public func expire(_ reply: xcallback_reply) -> Bool {
        let held = storage.withLock { storage -> (plugin: String, count: Int)? in
            guard let index = Self.liveIndex(reply.token, in: storage) else { return nil }
            let entry = storage.slots[index].entry!
            switch entry.mode {
            case .completed, .completedInPlace: return nil
            case .deliver, .synchronous: break
            }
            storage.expired[reply.token] = (entry.request, entry.plugin)
            storage.expiredByPlugin[entry.plugin, default: 0] += 1
            Self.release(index, in: &storage)
            return (entry.plugin, storage.expiredByPlugin[entry.plugin]!)
        }
        guard let held else { return false }
        // The header promises a request stays valid until its plug-in
        // completes it, so the host may not free one a plug-in never
        // completes; it says so instead, at 1,024 such requests and at
        // every doubling after.
        if held.count >= Self.heldWarningStart, held.count & (held.count - 1) == 0 {
            HostAPI.logger.warning("""
                plug-in '\(PrintableText.escaping(held.plugin))' holds \(held.count) requests past their Timeout \
                that it has not completed; the host keeps each (a few KB) until it is completed
                """)
        }
        return true
    }

    /// How many requests a plug-in holds past their Timeout before the
    /// host warns of it.
    static let heldWarningStart = 1024

    /// The plug-in that owns a pending token, for log lines.
    public func plugin(of reply: xcallback_reply) -> String? {
        storage.withLock { storage in
            Self.liveIndex(reply.token, in: storage).flatMap { storage.slots[$0].entry?.plugin }
        }
    }

    /// "plug-in 'x' … request 7 (route R)" for a token completed recently, for log lines.
    public func describe(_ reply: xcallback_reply) -> String? {
        storage.withLock { storage in
            guard let completion = storage.recent.lazy.compactMap({ $0 }).first(where: { $0.token == reply.token })
            else { return nil }
            return "plug-in '\(PrintableText.escaping(completion.plugin))' completed request \(completion.requestID) (route \(PrintableText.escaping(completion.route)))"
        }
    }

    /// Pending handler calls (not counting expired ones).
    public var pendingCount: Int {
        storage.withLock { $0.slots.count - $0.free.count }
    }

    private static func remember(_ completion: Completion, in storage: inout Storage) {
        storage.recent[storage.recentNext] = completion
        storage.recentNext = (storage.recentNext + 1) % remembered
    }

    private static func completion(_ token: UInt64, _ entry: Entry) -> Completion {
        Completion(token: token, requestID: entry.request.id, plugin: entry.plugin, route: entry.request.routeText)
    }

    private static func liveIndex(_ token: UInt64, in storage: Storage) -> Int? {
        let index = Int(token & 0xFFFF_FFFF)
        let generation = UInt32(token >> 32)
        // In place: reading `slots[index]` as a value copies its entry, a
        // retain and a release twice per request on the fast lane.
        let live = storage.slots.withUnsafeBufferPointer { slots in
            index < slots.count && slots[index].generation == generation && slots[index].occupied
        }
        return live ? index : nil
    }

    private static func release(_ index: Int, in storage: inout Storage) {
        storage.slots[index].entry = nil
        storage.slots[index].occupied = false
        // A slot whose generation would wrap is never used again: its next
        // token would be one handed out 2^32 uses ago, which a plug-in may
        // still hold (a request past its Timeout stays in `expired`). The
        // fast lane reuses one slot for every request, so at full speed
        // that is a matter of hours; one slot's memory is the price.
        guard storage.slots[index].generation < UInt32.max else { return }
        storage.slots[index].generation += 1
        storage.free.append(UInt32(index))
    }
}
