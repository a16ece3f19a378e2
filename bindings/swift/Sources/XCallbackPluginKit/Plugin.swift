import CXCallback
import Synchronization
import XCallbackParameters

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A plug-in written in Swift. Declare one as a global constant and export
/// the two entry points with `@_cdecl` (Swift cannot export them for you
/// without macros):
///
/// ```swift
/// let calculator = Plugin(name: "calculator", version: "1.0.0") { routes in
///     routes.action("calc", "add") { request in
///         .success(["result": "\(try request.parameter("lhs", as: Double.self) + …)"])
///     }
/// }
/// @_cdecl("xcallback_plugin_descriptor")
/// public func descriptor() -> UnsafeRawPointer { calculator.descriptor }
/// @_cdecl("xcallback_plugin_register")
/// public func register(_ api: UnsafeRawPointer?, _ plugin: OpaquePointer?) -> Int32 {
///     calculator.register(api: api, plugin: plugin)
/// }
/// ```
public final class Plugin: @unchecked Sendable {
    // @unchecked: `descriptor` points at immutable memory written once in
    // init and never freed (the host may read it at any time).
    public let name: String
    /// The `xcallback_descriptor` to return from `xcallback_plugin_descriptor`.
    public let descriptor: UnsafeRawPointer
    private let routes: Routes

    public init(name: String, version: String, summary: String = "", routes build: (inout Routes) -> Void) {
        self.name = name
        var routes = Routes()
        build(&routes)
        self.routes = routes
        let descriptor = UnsafeMutablePointer<xcallback_descriptor>.allocate(capacity: 1)
        descriptor.initialize(to: xcallback_descriptor(
            magic: XCALLBACK_ABI_MAGIC,
            abi_major: UInt16(XCALLBACK_ABI_MAJOR),
            abi_minor: UInt16(XCALLBACK_ABI_MINOR),
            descriptor_size: UInt32(MemoryLayout<xcallback_descriptor>.size),
            host_api_size: UInt32(MemoryLayout<xcallback_host_api>.size),
            name: UnsafePointer(strdup(name)),
            version: UnsafePointer(strdup(version)),
            description: UnsafePointer(strdup(summary))))
        self.descriptor = UnsafeRawPointer(descriptor)
    }

    /// The body of `xcallback_plugin_register`.
    public func register(api rawAPI: UnsafeRawPointer?, plugin: OpaquePointer?) -> Int32 {
        guard let rawAPI else { return Int32(XCALLBACK_ERR_INVALID_ARGUMENT) }
        let api = rawAPI.assumingMemoryBound(to: xcallback_host_api.self)
        for route in routes.routes {
            // Boxes live as long as the process: the host may call a handler
            // until it exits, and plug-ins are never unloaded.
            let box = Unmanaged.passRetained(HandlerBox(api: api, route: route)).toOpaque()
            let status: Int32
            switch route.form {
            case .action(let scheme, let action):
                status = api.pointee.register_action(plugin, scheme, action, trampoline, box)
            case .controllerAction(let scheme, let controller, let action):
                status = api.pointee.register_controller_action(plugin, scheme, controller, action, trampoline, box)
            case .pattern(let pattern):
                status = api.pointee.register_pattern(plugin, pattern, trampoline, box)
            }
            if status != XCALLBACK_OK { return status }
        }
        return Int32(XCALLBACK_OK)
    }
}

/// One registered Swift handler and the host table to answer through.
final class HandlerBox: @unchecked Sendable {
    // @unchecked: the host API table is immutable and outlives the plug-in.
    let api: UnsafePointer<xcallback_host_api>
    let argumentNames: [String]
    /// The route's body, taken apart once: matching the enum for every
    /// call copies the closure out of it (a retain and a release). The
    /// synchronous one is not optional: unwrapping an optional closure
    /// property copies it too, where a plain one is called in place.
    private let handler: Handler
    /// nil for a synchronous route; set, `handler` is never called.
    private let asyncHandler: AsyncHandler?
    /// A request's storage a finished call left behind (nothing kept it),
    /// for the next call: most calls then allocate nothing for their request.
    /// An atomic exchange, not a lock: handlers of one route run on many
    /// threads at once, and ThreadSanitizer cannot see a `Mutex` that parks.
    private let spare = Atomic<UnsafeMutableRawPointer?>(nil)

    /// The storage for a call on `host`: the spare one pointed at it, or a
    /// new one. Returned at +1, the spare's reference moved out of `spare`.
    @inline(__always)
    func storage(for host: HostRequest) -> RequestStorage {
        if let raw = spare.exchange(nil, ordering: .acquiring) {
            let storage = Unmanaged<RequestStorage>.fromOpaque(raw).takeRetainedValue()
            storage.reset(to: host)
            return storage
        }
        return RequestStorage(host, argumentNames: argumentNames)
    }

    /// Keeps `storage` for the next call (dropped if one is kept already).
    /// Consumed, so that its reference moves into `spare` with no retain.
    @inline(__always)
    func keepSpare(_ storage: consuming RequestStorage) {
        let raw = Unmanaged.passRetained(storage).toOpaque()
        _ = consume storage
        if !spare.compareExchange(expected: nil, desired: raw, ordering: .releasing).exchanged {
            Unmanaged<RequestStorage>.fromOpaque(raw).release()
        }
    }

    init(api: UnsafePointer<xcallback_host_api>, route: Routes.Route) {
        self.api = api
        switch route.body {
        case .sync(let body): (handler, asyncHandler) = (body, nil)
        case .async(let body): (handler, asyncHandler) = ({ _ in .decline }, body)
        }
        if case .pattern(let pattern) = route.form {
            argumentNames = PatternArguments.names(in: pattern)
        } else {
            argumentNames = []
        }
    }
}

/// The one C function every Swift handler is registered with; `userData`
/// is the route's box, which lives as long as the process: it is borrowed
/// for the call, not retained.
private let trampoline: xcallback_handler = { request, reply, userData in
    Unmanaged<HandlerBox>.fromOpaque(userData!)._withUnsafeGuaranteedRef { $0.call(request, reply: reply) }
}

extension HandlerBox {
    /// Runs the route's handler on `request` and completes `reply` with its answer.
    func call(_ request: OpaquePointer?, reply: xcallback_reply) {
        if let asyncHandler {
            callAsync(asyncHandler, request, reply: reply)
            return
        }
        // The storage's one reference moves from the spare slot into the
        // request and back, so the call retains and releases nothing.
        let borrowed = Request(storage: storage(for: HostRequest(api: api, request: request)))
        let answer: Reply
        do { answer = try handler(borrowed) } catch { answer = Reply.from(error) }
        // `consume`: a `let` otherwise lives to the end of the scope, and its
        // reference would make the storage look shared.
        if let unused = (consume borrowed).endBorrow() { keepSpare(unused) }
        ReplySender(api: api).send(answer, to: reply)
    }

    /// Out of line: starting a task sizes a `TaskPriority?` on the stack
    /// from its metadata, which `call` would otherwise look up every time.
    @inline(never)
    private func callAsync(_ asyncHandler: @escaping AsyncHandler, _ request: OpaquePointer?, reply: xcallback_reply) {
        let sender = ReplySender(api: api)
        let borrowed = Request(borrowing: request, api: api, argumentNames: argumentNames)
        borrowed.copyOut()
        let copied = borrowed
        Task {
            let answer: Reply
            do { answer = try await asyncHandler(copied) } catch { answer = Reply.from(error) }
            sender.send(answer, to: reply)
        }
    }
}
