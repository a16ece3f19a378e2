#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import XCallbackBridge
import XCallbackURL

/// One handler call in progress on an instance: the request the accessors
/// read, the parameters the module added for its reply, and the reply,
/// once given (exactly once, as with a C reply token).
final class WasmCall {
    let request: RequestFields
    let route: String
    var replyParameters: [QueryParameter] = []
    var result: HandlerResult?

    init(request: RequestFields, route: String) {
        self.request = request
        self.route = route
    }

    /// The value named `name` among `list`, first one first.
    static func first(_ name: String, in list: [QueryParameter]) -> String? {
        list.first { $0.name == name }?.value
    }
}
#endif
