import Synchronization
import XCallbackURL

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
    private let capture = ReplyCapture()
    private let busy = Atomic<Bool>(false)

    init(endpoint: InProcessEndpoint) {
        self.endpoint = endpoint
    }

    /// Runs request `id` on handler `index`; false, having done nothing,
    /// when it needs the general path (a bound function, a bad index, the
    /// lane in use).
    func run(id: UInt64, handler index: Int, fields: RequestFields, send: @escaping @Sendable (WorkerFrame) -> Void,
             output: any FrameOutput) -> Bool {
        let registrations = endpoint.plugin.registrations
        guard index >= 0, index < registrations.count, case .native(let handler) = registrations[index].handler,
              busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else { return false }
        defer { busy.store(false, ordering: .releasing) }
        let native = self.native
        native.refill(fields, route: registrations[index].pattern.text)
        let call = SynchronousCall(line: UnsafeBufferPointer(start: nil, count: 0), id: id, sequence: 0, sink: nil,
                                   started: 0, plugin: endpoint.pluginName, capture: capture, owner: nil)
        let reply = HostAPI.replies.openSynchronous(request: native, plugin: endpoint.pluginName, call: call)
        handler.function(native.opaque, reply, handler.userData)
        let end = HostAPI.replies.endSynchronous(reply) { _ in
            { result in send(.result(id: id, result: result)) }
        }
        switch end {
        case .completedInPlace:
            let capture = self.capture
            output.append { WorkerFrame.encodeResult(id: id, capture: capture, into: &$0) }
        case .completed(let result):
            send(.result(id: id, result: result))
        case .promoted, .promotedEarlier:
            // The handler kept its reply, and the request it may still read.
            self.native = NativeRequest()
            send(.returned(id: id))
        }
        return true
    }
}
