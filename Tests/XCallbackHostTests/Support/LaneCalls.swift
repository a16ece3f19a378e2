import CXCallback
import Testing
@testable import XCallbackBridge
import XCallbackURL

/// A lane's calls as the reply-slot suites make them: plug-in "lane", one
/// route, and one `ReplyCapture` for every call, as a lane has.
struct LaneCalls {
    let capture = ReplyCapture()
    static let route = "t://x-callback-url/t"

    func request() -> NativeRequest {
        NativeRequest(RequestFields(url: Self.route, scheme: "t", source: nil, parameters: [], arguments: []),
                      route: Self.route)
    }

    func call(id: UInt64 = 7, started: UInt64 = 100, owner: (any SynchronousCallOwner)? = nil) -> SynchronousCall {
        SynchronousCall(line: UnsafeBufferPointer(start: nil, count: 0), id: id, sequence: 0, sink: nil,
                        started: started, plugin: "lane", capture: capture, owner: owner)
    }

    /// Opens `call` on the lane's slot (replaced if spent), its request
    /// numbered as the call.
    func open(_ table: ReplyTable, _ slot: inout SynchronousSlot?, call: SynchronousCall) throws
        -> (xcallback_reply, SynchronousSlot) {
        let ready = try #require(table.readySlot(&slot))
        let native = request()
        native.assign(id: call.id)
        return (table.openSynchronous(on: ready, request: native, call: call,
                                      name: table.callName(plugin: "lane", route: Self.route)), ready)
    }
}
