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
/// Two kinds of slot answer to a token. The general path opens a slot in
/// this table with a delivery closure, which a completion calls on its own
/// thread. A fast lane (the host's or a worker's) owns a `SynchronousSlot`
/// (a token whose index has `slotBit` set): the lane's thread is inside
/// the handler, so a completion only leaves its result in the slot, and
/// the lane takes it when the handler returns (`endSynchronous`): no lock,
/// no closure, no object, no thread hand-off. A handler that keeps its
/// token past its return is *promoted* to the general path then, or by the
/// deadline timer while it runs (`promoteSynchronous`): its call moves into
/// this table, and the lane's token is forwarded to it.
public final class ReplyTable: Sendable {
    public typealias Delivery = @Sendable (HandlerResult) -> Void

    /// Why a completion was refused.
    public enum Refusal: Error, Equatable {
        /// The token was completed before (or never existed).
        case alreadyCompleted
        /// The host had already answered `Timeout`; the late result is dropped.
        case afterTimeout(plugin: String)
    }

    /// How a synchronous call ended, as the fast lane learns it.
    public enum SynchronousEnd {
        /// Completed while the handler ran: the slot is free again.
        case completed(HandlerResult)
        /// Still pending when the handler returned: handed to the general
        /// path with the delivery `promote` gave.
        case promoted
        /// Completed while the handler ran, the answer kept in the call's
        /// `ReplyCapture`: the slot is free again.
        case completedInPlace
        /// The deadline timer promoted it, or a decline handed it over,
        /// while the handler ran.
        case promotedEarlier
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
        var deliver: Delivery
        /// The token the plug-in holds, when this is a lane's call promoted
        /// here (`forwarded` leads from it to this slot).
        var laneToken: UInt64?
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
        /// Lane calls promoted to this table: the token the plug-in holds
        /// to the token of the slot here.
        var forwarded: [UInt64: UInt64] = [:]
        /// Requests answered `Timeout` whose handler may still be reading
        /// them, by the token the plug-in holds: kept alive until the
        /// plug-in completes them, however late.
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

    /// Set in a token's index for a lane's call. The table's own slots stay
    /// below it: 2^31 requests pending at once would not fit in memory.
    static let slotBit: UInt64 = 0x8000_0000

    private let storage = Lock(Storage())
    private let lanes: SynchronousSlotTable
    /// Each plug-in and route a lane call can name, numbered once (when a
    /// lane learns its routes), so a lane's slot remembers a call as numbers.
    private let callNames = Lock(CallNames())

    private struct CallNames {
        struct Name: Hashable {
            var plugin: String
            var route: String
        }
        var numbers: [Name: UInt32] = [:]
        var names: [Name] = []
    }
    /// The generation a new slot starts at: 0, but for a test of the wrap.
    private let firstGeneration: UInt32

    public convenience init() { self.init(firstGeneration: 0) }

    init(firstGeneration: UInt32) {
        self.firstGeneration = firstGeneration
        lanes = SynchronousSlotTable(firstGeneration: firstGeneration)
    }

    // MARK: The general path

    /// Registers a pending handler call and returns its token.
    public func open(request: NativeRequest, plugin: String, deliver: @escaping Delivery) -> xcallback_reply {
        let token = storage.withLock { storage in
            Self.open(Entry(request: request, plugin: plugin, deliver: deliver), in: &storage, firstGeneration)
        }
        return xcallback_reply(token: token)
    }

    private static func open(_ entry: Entry, in storage: inout Storage, _ firstGeneration: UInt32) -> UInt64 {
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

    /// Completes a token: delivers `result` (on the caller's thread, or to
    /// the synchronous caller) and releases the slot. Returns the refusal
    /// when it was not pending.
    @discardableResult
    public func complete(_ reply: xcallback_reply, with result: (_ plugin: String, _ request: NativeRequest) -> HandlerResult) -> Refusal? {
        if let (number, generation) = Self.laneSlot(reply.token),
           let done = lanes.withSlot(number, { complete(reply, generation: generation, on: $0, with: result) }),
           let done {
            return done
        }
        let taken = storage.withLock { storage -> Result<Entry, Refusal> in
            if let expired = storage.expired.removeValue(forKey: reply.token) {
                storage.expiredByPlugin[expired.plugin, default: 1] -= 1
                Self.remember(Completion(token: reply.token, requestID: expired.request.id,
                                         plugin: expired.plugin, route: expired.request.routeText), in: &storage)
                return .failure(.afterTimeout(plugin: expired.plugin))
            }
            guard let index = Self.liveIndex(reply.token, in: storage) else { return .failure(.alreadyCompleted) }
            let entry = storage.slots[index].entry!
            Self.remember(Completion(token: reply.token, requestID: entry.request.id, plugin: entry.plugin,
                                     route: entry.request.routeText), in: &storage)
            Self.release(index, in: &storage)
            return .success(entry)
        }
        switch taken {
        case .success(let entry):
            entry.deliver(result(entry.plugin, entry.request))
            return nil
        case .failure(let refusal):
            return refusal
        }
    }

    // MARK: A lane's synchronous calls

    /// A reply slot for a new fast lane, or nil when every one is in use
    /// (the lane then takes the general path). Give it back when the lane goes.
    public func takeSlot() -> SynchronousSlot? {
        lanes.take()
    }

    /// Gives a lane's slot back for the next lane.
    public func giveBack(_ slot: SynchronousSlot) {
        lanes.giveBack(slot)
    }

    /// The lane's slot, ready for a call: one whose generations are spent
    /// is replaced. Nil when there is none to be had.
    public func readySlot(_ slot: inout SynchronousSlot?) -> SynchronousSlot? {
        if let current = slot, current.isSpent { slot = lanes.take() }
        return slot
    }

    /// `readySlot` for a lane that keeps its slot unretained, as it may:
    /// the table keeps every slot it hands out for its own life.
    public func readySlot(_ slot: inout Unmanaged<SynchronousSlot>?) -> Unmanaged<SynchronousSlot>? {
        if let current = slot, current._withUnsafeGuaranteedRef({ $0.isSpent }) {
            slot = lanes.take().map(Unmanaged.passUnretained)
        }
        return slot
    }

    /// The number a lane passes to `openSynchronous` for calls of `plugin`'s
    /// route `route`. The names are kept for the host's life: a plug-in's
    /// routes, however often it is reloaded, are a short list.
    public func callName(plugin: String, route: String) -> UInt32 {
        callNames.withLock { names in
            let name = CallNames.Name(plugin: plugin, route: route)
            if let number = names.numbers[name] { return number }
            let number = UInt32(names.names.count)
            names.names.append(name)
            names.numbers[name] = number
            return number
        }
    }

    /// Registers the call the lane's thread is about to make on its slot
    /// (`readySlot`), to the route `name` numbers (`callName`); end it with
    /// `endSynchronous` once the handler returns.
    /// `call` is consumed: moved into the slot, not copied (a copy retains
    /// the plug-in's name).
    public func openSynchronous(on slot: SynchronousSlot, request: NativeRequest, call: consuming SynchronousCall,
                                name: UInt32) -> xcallback_reply {
        let generation = slot.current.generation &+ 1
        slot.record(generation: generation, requestID: call.id, name: name)
        // Identity first: the lane hands the same request every time, and
        // storing it again would retain and release it.
        if slot.request !== request { slot.request = request }
        slot.started.store(call.started, ordering: .releasing)
        slot.call = consume call
        slot.set(.init(generation: generation, phase: .running))
        return xcallback_reply(token: UInt64(generation) << 32 | Self.slotBit | UInt64(slot.number))
    }

    /// Completes a lane's call in place: `capture` copies the answer into
    /// the call's `ReplyCapture`. Nil when the token is not a running lane
    /// call (the caller completes it with `complete`); false when `capture`
    /// declined (the caller does the same, and nothing has changed).
    public func completeInPlace(_ reply: xcallback_reply, _ capture: (ReplyCapture) -> Bool) -> Bool? {
        guard let (number, generation) = Self.laneSlot(reply.token) else { return nil }
        return lanes.withSlot(number) { slot -> Bool? in
            guard slot.move(from: .init(generation: generation, phase: .running),
                            to: .init(generation: generation, phase: .claimed)) else { return nil }
            // Borrowed: the call's capture is the lane's, which outlives
            // the call; made a strong reference, it was retained and released.
            let captured = Unmanaged.passUnretained(slot.call.unsafelyUnwrapped.capture)
                ._withUnsafeGuaranteedRef(capture)
            slot.set(.init(generation: generation, phase: captured ? .answeredInPlace : .running))
            return captured
        } ?? nil
    }

    /// `complete` for a lane's call: nil when the call is not on the slot
    /// (it was promoted, or has ended) and the table must look.
    private func complete(_ reply: xcallback_reply, generation: UInt32, on slot: SynchronousSlot,
                          with result: (String, NativeRequest) -> HandlerResult) -> Refusal?? {
        guard let phase = slot.claim(generation: generation, when: { $0 != .idle }) else { return nil }
        guard phase == .running else {
            slot.set(.init(generation: generation, phase: phase))
            return .some(.alreadyCompleted)
        }
        let call = slot.call.unsafelyUnwrapped
        let request = slot.request.unsafelyUnwrapped
        let answer = result(call.plugin, request)
        if answer == .declined, let owner = call.owner {
            // The next route is tried now, as on the general path, not when
            // (or if) this handler returns; the lane finds the call over.
            // The claim keeps every other party out; the table is not involved.
            let deliver = owner.takeOver(call, reply: reply)
            slot.set(.init(generation: generation, phase: .idle))
            deliver(.declined)
            return .some(nil)
        }
        slot.result = answer
        slot.set(.init(generation: generation, phase: .answered))
        return .some(nil)
    }

    /// Ends the lane's call `reply` on `slot` once its handler has
    /// returned. A result left in the slot is returned; a call still
    /// pending is handed to the general path with the delivery `promote`
    /// builds (while the slot is claimed, so no completion falls in between).
    public func endSynchronous(_ reply: xcallback_reply, on slot: SynchronousSlot,
                               promote: (SynchronousCall) -> Delivery) -> SynchronousEnd {
        let generation = UInt32(truncatingIfNeeded: reply.token >> 32)
        while true {
            let now = slot.settled(generation: generation)
            guard now.generation == generation else { return .promotedEarlier }
            let idle = SynchronousSlot.Word(generation: generation, phase: .idle)
            switch now.phase {
            case .idle:
                return .promotedEarlier
            case .answeredInPlace:
                if slot.move(from: now, to: idle) { return .completedInPlace }
            case .answered:
                // Idle, the slot is the lane's again: the result is its to take.
                if slot.move(from: now, to: idle) {
                    let result = slot.result.unsafelyUnwrapped
                    slot.result = nil
                    return .completed(result)
                }
            case .running:
                if slot.move(from: now, to: .init(generation: generation, phase: .claimed)) {
                    moveToTable(reply, on: slot, with: promote)
                    slot.set(idle)
                    return .promoted
                }
            case .claimed:
                continue
            }
        }
    }

    /// Moves a claimed, unanswered lane call into the table, reachable by
    /// the lane's token.
    private func moveToTable(_ reply: xcallback_reply, on slot: SynchronousSlot, with promote: (SynchronousCall) -> Delivery) {
        let call = slot.call.unsafelyUnwrapped
        // Built before the lock: the claim keeps completions out until the
        // entry is there, and the general path's side takes locks of its own.
        let entry = Entry(request: slot.request.unsafelyUnwrapped, plugin: call.plugin, deliver: promote(call),
                          laneToken: reply.token)
        storage.withLock { storage in
            storage.forwarded[reply.token] = Self.open(entry, in: &storage, firstGeneration)
        }
    }

    /// The deadline timer's side of a lane call that has run since before
    /// `cutoff`: hands it to the general path with the delivery `promote`
    /// builds, and returns the result it had already left, if any. Nil when
    /// the call has ended, is younger, or was promoted before.
    public func promoteSynchronous(_ reply: xcallback_reply, startedBefore cutoff: UInt64,
                                   promote: (SynchronousCall) -> Delivery) -> HandlerResult?? {
        guard let (number, generation) = Self.laneSlot(reply.token) else { return nil }
        return lanes.withSlot(number) { slot -> HandlerResult?? in
            // A young call is left alone without a claim, which the
            // handler's own completion would have to wait out.
            guard slot.started.load(ordering: .acquiring) <= cutoff,
                  let phase = slot.claim(generation: generation, when: { $0 != .idle })
            else { return nil }
            let call = slot.call.unsafelyUnwrapped
            guard call.started <= cutoff else {
                slot.set(.init(generation: generation, phase: phase))
                return nil
            }
            let answer: HandlerResult?
            switch phase {
            case .running:
                moveToTable(reply, on: slot, with: promote)
                answer = nil
            case .answered:
                // Answered, but the handler has not returned for a whole
                // timeout: the outcome goes out now, as it would have on
                // the general path.
                _ = promote(call)
                answer = slot.result.unsafelyUnwrapped
                slot.result = nil
            default:
                _ = promote(call)
                answer = .outcome(call.capture.outcome)
            }
            slot.set(.init(generation: generation, phase: .idle))
            return .some(answer)
        } ?? nil
    }

    // MARK: Deadlines and log lines

    /// The host's side of a deadline: retires `reply` if it is still
    /// pending, without delivering anything (the dispatcher has answered
    /// `Timeout` already), and keeps the request alive for the handler that
    /// may still be reading it. Returns false when it had completed.
    @discardableResult
    public func expire(_ reply: xcallback_reply) -> Bool {
        let held = storage.withLock { storage -> (plugin: String, count: Int)? in
            guard let index = Self.liveIndex(reply.token, in: storage) else { return nil }
            let entry = storage.slots[index].entry!
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
        if let (number, generation) = Self.laneSlot(reply.token),
           let recorded = lanes.withSlot(number, { slot -> (requestID: UInt64, name: UInt32)? in
               // Pending: not over, and not moved into the table (idle).
               let now = slot.current
               guard now.generation == generation, now.phase != .idle else { return nil }
               return slot.recorded(generation: generation)
           }), let recorded {
            return names(recorded.name)?.plugin
        }
        return storage.withLock { storage in
            Self.liveIndex(reply.token, in: storage).flatMap { storage.slots[$0].entry?.plugin }
        }
    }

    /// "plug-in 'x' … request 7 (route R)" for a token completed recently,
    /// for log lines: a lane's call while its slot remembers it, any other
    /// among the last `remembered` completions.
    public func describe(_ reply: xcallback_reply) -> String? {
        if let (number, generation) = Self.laneSlot(reply.token),
           let recorded = lanes.withSlot(number, { $0.recorded(generation: generation) }), let recorded,
           let name = names(recorded.name) {
            return Self.text(of: Completion(token: reply.token, requestID: recorded.requestID, plugin: name.plugin,
                                            route: name.route))
        }
        return storage.withLock { storage in
            storage.recent.lazy.compactMap({ $0 }).first(where: { $0.token == reply.token }).map(Self.text(of:))
        }
    }

    private func names(_ number: UInt32) -> CallNames.Name? {
        callNames.withLock { names in Int(number) < names.names.count ? names.names[Int(number)] : nil }
    }

    /// Requests pending in the table: the general path's and promoted
    /// lane calls, not the calls running on a lane.
    public var pendingCount: Int {
        storage.withLock { $0.slots.count - $0.free.count }
    }

    private static func text(of completion: Completion) -> String {
        "plug-in '\(PrintableText.escaping(completion.plugin))' completed request \(completion.requestID) (route \(PrintableText.escaping(completion.route)))"
    }

    private static func remember(_ completion: Completion, in storage: inout Storage) {
        storage.recent[storage.recentNext] = completion
        storage.recentNext = (storage.recentNext + 1) % remembered
    }

    /// The lane slot's number and the call's generation, when `token` is a lane call's.
    private static func laneSlot(_ token: UInt64) -> (number: UInt32, generation: UInt32)? {
        guard token & slotBit != 0 else { return nil }
        return (UInt32(truncatingIfNeeded: token & (slotBit - 1)), UInt32(truncatingIfNeeded: token >> 32))
    }

    /// The table's slot for `token`, if it is live; a lane's token leads to
    /// the slot its promoted call moved to.
    private static func liveIndex(_ token: UInt64, in storage: Storage) -> Int? {
        let token = token & slotBit == 0 ? token : (storage.forwarded[token] ?? token)
        let index = Int(token & 0xFFFF_FFFF)
        let generation = UInt32(token >> 32)
        // In place: reading `slots[index]` as a value copies its entry, a
        // retain and a release per access.
        let live = storage.slots.withUnsafeBufferPointer { slots in
            index < slots.count && slots[index].generation == generation && slots[index].occupied
        }
        return live ? index : nil
    }

    private static func release(_ index: Int, in storage: inout Storage) {
        if let laneToken = storage.slots[index].entry?.laneToken { storage.forwarded[laneToken] = nil }
        storage.slots[index].entry = nil
        storage.slots[index].occupied = false
        // A slot whose generation would wrap is never used again: its next
        // token would be one handed out 2^32 uses ago, which a plug-in may
        // still hold (a request past its Timeout stays in `expired`).
        guard storage.slots[index].generation < UInt32.max else { return }
        storage.slots[index].generation += 1
        storage.free.append(UInt32(index))
    }
}
