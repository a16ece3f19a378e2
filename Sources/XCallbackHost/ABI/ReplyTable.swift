import CXCallback

/// Maps the `xcallback_reply` tokens handed to plug-ins to the requests
/// waiting for them, and enforces exactly-once completion.
///
/// A token is a generational index (slot in the low 32 bits, the slot's
/// generation in the high 32), never a pointer: a second completion, a
/// completion after a timeout, or a made-up token finds no live slot and is
/// refused, so a misbehaving plug-in cannot make the host touch freed memory.
final class ReplyTable: Sendable {
    typealias Delivery = @Sendable (HandlerResult) -> Void

    /// Why a completion was refused.
    enum Refusal: Error, Equatable {
        /// The token was completed before (or never existed).
        case alreadyCompleted
        /// The host had already answered `Timeout`; the late result is dropped.
        case afterTimeout(plugin: String)
    }

    private struct Slot {
        var generation: UInt32 = 0
        var entry: Entry?
    }

    private struct Entry {
        var request: NativeRequest
        var plugin: String
        var deliver: Delivery
    }

    private struct Storage {
        var slots: [Slot] = []
        var free: [UInt32] = []
        /// Requests answered `Timeout` whose handler may still be reading
        /// them: kept alive until the plug-in completes them, however late.
        var expired: [UInt64: (request: NativeRequest, plugin: String)] = [:]
        /// The last completions, so a second completion can be logged with
        /// the plug-in, the route and the request it was for.
        var recent = [Completion?](repeating: nil, count: ReplyTable.remembered)
        var recentNext = 0
    }

    /// A token completed once, for the log line of a second completion.
    struct Completion {
        var token: UInt64
        var request: NativeRequest
        var plugin: String
    }

    /// How many completions are remembered (a bounded ring).
    static let remembered = 256

    private let storage = Lock(Storage())

    /// Registers a pending handler call and returns its token.
    func open(request: NativeRequest, plugin: String, deliver: @escaping Delivery) -> xcallback_reply {
        let token = storage.withLock { storage -> UInt64 in
            let index: UInt32
            if let reused = storage.free.popLast() {
                index = reused
            } else {
                index = UInt32(storage.slots.count)
                storage.slots.append(Slot())
            }
            storage.slots[Int(index)].entry = Entry(request: request, plugin: plugin, deliver: deliver)
            return UInt64(storage.slots[Int(index)].generation) << 32 | UInt64(index)
        }
        return xcallback_reply(token: token)
    }

    /// Completes a token: delivers `result` (on the caller's thread) and
    /// releases the slot. Returns the refusal when it was not pending.
    @discardableResult
    func complete(_ reply: xcallback_reply, with result: (_ plugin: String, _ request: NativeRequest) -> HandlerResult) -> Refusal? {
        let taken = storage.withLock { storage -> Result<Entry, Refusal> in
            if let expired = storage.expired.removeValue(forKey: reply.token) {
                Self.remember(Completion(token: reply.token, request: expired.request, plugin: expired.plugin), in: &storage)
                return .failure(.afterTimeout(plugin: expired.plugin))
            }
            guard let index = Self.liveIndex(reply.token, in: storage) else {
                return .failure(.alreadyCompleted)
            }
            let entry = storage.slots[index].entry!
            Self.release(index, in: &storage)
            Self.remember(Completion(token: reply.token, request: entry.request, plugin: entry.plugin), in: &storage)
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

    /// The host's side of a deadline: retires `reply` if it is still
    /// pending, without delivering anything (the dispatcher has answered
    /// `Timeout` already), and keeps the request alive for the handler that
    /// may still be reading it. Returns false when it had completed.
    @discardableResult
    func expire(_ reply: xcallback_reply) -> Bool {
        storage.withLock { storage in
            guard let index = Self.liveIndex(reply.token, in: storage) else { return false }
            let entry = storage.slots[index].entry!
            storage.expired[reply.token] = (entry.request, entry.plugin)
            Self.release(index, in: &storage)
            return true
        }
    }

    /// The plug-in that owns a pending token, for log lines.
    func plugin(of reply: xcallback_reply) -> String? {
        storage.withLock { storage in
            Self.liveIndex(reply.token, in: storage).flatMap { storage.slots[$0].entry?.plugin }
        }
    }

    /// "plug-in 'x' … request 7 (route R)" for a token completed recently, for log lines.
    func describe(_ reply: xcallback_reply) -> String? {
        storage.withLock { storage in
            storage.recent.lazy.compactMap { $0 }.first { $0.token == reply.token }.map { completion in
                let fields = completion.request.fields
                return "plug-in '\(PrintableText.escaping(completion.plugin))' completed request \(fields.id) (route \(PrintableText.escaping(String(cString: completion.request.route))))"
            }
        }
    }

    private static func remember(_ completion: Completion, in storage: inout Storage) {
        storage.recent[storage.recentNext] = completion
        storage.recentNext = (storage.recentNext + 1) % remembered
    }

    /// Pending handler calls (not counting expired ones).
    var pendingCount: Int {
        storage.withLock { $0.slots.count - $0.free.count }
    }

    private static func liveIndex(_ token: UInt64, in storage: Storage) -> Int? {
        let index = Int(token & 0xFFFF_FFFF)
        let generation = UInt32(token >> 32)
        guard index < storage.slots.count,
              storage.slots[index].generation == generation,
              storage.slots[index].entry != nil else { return nil }
        return index
    }

    private static func release(_ index: Int, in storage: inout Storage) {
        storage.slots[index].entry = nil
        storage.slots[index].generation &+= 1
        storage.free.append(UInt32(index))
    }
}
