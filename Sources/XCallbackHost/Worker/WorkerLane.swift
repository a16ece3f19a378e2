import CXCallback
import Synchronization
import XCallbackBridge
import XCallbackURL
import XCallbackWire

/// A worker's fast path, the counterpart of the host's `FastLane`: a
/// request for a native handler gets a request refilled in place and a
/// synchronous reply slot, and an answer given before the handler returns
/// goes back as a frame written from the reply's bytes. A handler that
/// keeps its reply is handed to the general path when it returns.
///
/// One thread uses the lane at a time; after a stall hand-off the new
/// reader takes the general path (`enter` fails) until it is free again.
final class WorkerLane: @unchecked Sendable {
    // @unchecked: `native` is touched only by the thread that entered.
    private let endpoint: InProcessEndpoint
    @exclusivity(unchecked) private var native = NativeRequest()
    /// The request `claim` took: its frame id and handler.
    @exclusivity(unchecked) private var claimed: (id: UInt64, handler: Int) = (0, 0)
    private let capture = ReplyCapture()
    private let busy = Atomic<Bool>(false)
    /// The reply of the call running now, its token + 1 (0: none).
    private let running = Atomic<UInt64>(0)
    /// Where the call running now keeps its state (`ReplyTable`).
    @exclusivity(unchecked) private var replySlot = HostAPI.replies.takeSlot()

    /// By registration index; nil for a bound function. One reference per
    /// request, where reading the registration itself copied its pattern's
    /// strings and its handler (six retains).
    private let routes: [RouteSnapshot.NativeRoute?]

    init(endpoint: InProcessEndpoint) {
        self.endpoint = endpoint
        routes = endpoint.plugin.registrations.map { registration in
            guard case .native(let handler) = registration.handler else { return nil }
            // The host's lane's kind of route, without counts: a worker's
            // host counts its requests.
            return RouteSnapshot.NativeRoute(function: handler.function, userData: handler.userData,
                                             plugin: endpoint.pluginName, counts: nil, mark: endpoint.plugin.mark,
                                             pattern: registration.pattern.text)
        }
    }

    deinit {
        if let replySlot { HostAPI.replies.giveBack(replySlot) }
    }

    /// Takes a request frame's payload for the lane, filling its request in
    /// place (no `RequestFields`, no Strings); false, having done nothing,
    /// when it needs the general path. The reading thread claims, the same
    /// thread runs it (`runClaimed`): a thread that reads while another is
    /// stalled in a handler finds the lane busy.
    func claim(_ payload: UnsafeRawBufferPointer) -> Bool {
        guard let handler = RequestFrame.handler(of: payload).map(Int.init), handler >= 0, handler < routes.count,
              let route = routes[handler],
              busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else { return false }
        var filler = NativeRequestFiller(native, route: route.pattern)
        guard HostAPI.replies.readySlot(&replySlot) != nil, let (id, _) = RequestFrame.read(payload, into: &filler) else {
            busy.store(false, ordering: .releasing)
            return false
        }
        claimed = (id, handler)
        return true
    }

    /// The id of the request `claim` took.
    var claimedID: UInt64 { claimed.id }

    /// Runs the request `claim` took, then frees the lane.
    func runClaimed(send: @escaping @Sendable (WorkerFrame) -> Void, output: any FrameOutput) {
        defer { busy.store(false, ordering: .releasing) }
        guard let route = routes[claimed.handler] else { return }
        call(route, id: claimed.id, send: send, output: output)
    }

    /// Runs request `id` on handler `index`; false, having done nothing,
    /// when it needs the general path (a bound function, a bad index, the
    /// lane in use).
    func run(id: UInt64, handler index: Int, fields: RequestFields, send: @escaping @Sendable (WorkerFrame) -> Void,
             output: any FrameOutput) -> Bool {
        guard index >= 0, index < routes.count, let route = routes[index],
              busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else { return false }
        defer { busy.store(false, ordering: .releasing) }
        guard HostAPI.replies.readySlot(&replySlot) != nil else { return false }
        native.refill(fields, route: route.pattern)
        call(route, id: id, send: send, output: output)
        return true
    }

    /// The call running now has stalled (the input went to another
    /// thread): an answer it gave in place goes out now, not when its
    /// handler returns, which may be after the host's deadline; one it
    /// gives later goes out when given (its thread, which batches, would
    /// otherwise hold it until the handler returns).
    func promoteRunning(send: @escaping @Sendable (WorkerFrame) -> Void, output: any FrameOutput & Sendable) {
        let marker = running.load(ordering: .acquiring)
        guard marker != 0 else { return }
        var id: UInt64 = 0
        let answer = HostAPI.replies.promoteSynchronous(xcallback_reply(token: marker - 1), startedBefore: .max) { call in
            id = call.id
            return { [id] result in
                send(.result(id: id, result: result))
                output.flush()
            }
        }
        if case .some(.some(let result)) = answer { send(.result(id: id, result: result)) }
    }

    private func call(_ route: RouteSnapshot.NativeRoute, id: UInt64, send: @escaping @Sendable (WorkerFrame) -> Void,
                      output: any FrameOutput) {
        let native = self.native
        let call = SynchronousCall(line: UnsafeBufferPointer(start: nil, count: 0), id: id, sequence: 0, sink: nil,
                                   started: 0, plugin: endpoint.pluginName, capture: capture, owner: nil)
        // `claim` and `run` made sure of the slot.
        let slot = replySlot.unsafelyUnwrapped
        let reply = HostAPI.replies.openSynchronous(on: slot, request: native, call: call, name: route.callName)
        running.store(reply.token &+ 1, ordering: .releasing)
        route.function(native.opaque, reply, route.userData)
        running.store(0, ordering: .releasing)
        let end = HostAPI.replies.endSynchronous(reply, on: slot) { _ in
            { result in send(.result(id: id, result: result)) }
        }
        switch end {
        case .completedInPlace:
            let capture = self.capture
            output.append { ResultFrame.write(id: id, capture: capture, into: &$0) }
        case .completed(let result):
            send(.result(id: id, result: result))
        case .promoted, .promotedEarlier:
            // The handler kept its reply, and the request it may still read.
            self.native = NativeRequest()
            send(.returned(id: id))
        }
    }
}
