import CXCallback

/// What one registered route runs inside its plug-in: a C handler that
/// completes a reply token (now or later, from any thread), a bound C
/// function the host calls through libffi and answers for at once, or a
/// handler the host runs itself (a WebAssembly function), which also
/// answers before it returns.
public enum RouteHandler: Sendable {
    /// `register_action`, `register_controller_action`, `register_pattern`.
    case native(NativeHandler)
    /// `register_function`, or a function declared by a binding manifest.
    case bound(BoundFunction)
    /// A function of a plug-in in another format (``PluginFormat``), run by its runtime.
    case hosted(any HostedHandler)

    /// The bound function, if this route calls one.
    public var boundFunction: BoundFunction? {
        if case .bound(let function) = self { return function }
        return nil
    }
}

// MARK: the C view

extension RouteHandler {
    /// The handler as an `xcallback_handler`, for code that speaks only the
    /// C calling convention (completion through a reply token). A bound
    /// function is reached through a trampoline that calls it and completes
    /// the reply; ``InProcessEndpoint`` calls bound functions directly instead.
    public var function: xcallback_handler {
        switch self {
        case .native(let handler): return handler.function
        case .bound: return Self.boundTrampoline
        case .hosted: return Self.hostedTrampoline
        }
    }

    /// The `user_data` to pass with ``function``: the plug-in's own, or the
    /// bound function (kept alive by the registration holding it).
    public var userData: UnsafeMutableRawPointer? {
        switch self {
        case .native(let handler): return handler.userData
        case .bound(let function): return Unmanaged.passUnretained(function).toOpaque()
        case .hosted(let handler): return Unmanaged.passUnretained(handler as AnyObject).toOpaque()
        }
    }

    private static let boundTrampoline: xcallback_handler = { request, reply, userData in
        // Only requests built from fields reach a bound function: the fast
        // lane takes native handlers alone.
        guard let userData, let native = NativeRequest.from(request), let fields = native.fields else { return }
        let function = Unmanaged<BoundFunction>.fromOpaque(userData).takeUnretainedValue()
        let outcome = function.call(fields)
        HostAPI.replies.complete(reply) { _, _ in .outcome(outcome) }
    }

    private static let hostedTrampoline: xcallback_handler = { request, reply, userData in
        guard let userData, let native = NativeRequest.from(request), let fields = native.fields else { return }
        let handler = Unmanaged<AnyObject>.fromOpaque(userData).takeUnretainedValue()
        guard let hosted = handler as? any HostedHandler,
              let result = hosted.call(fields, route: native.routeText) else { return }
        HostAPI.replies.complete(reply) { _, _ in result }
    }
}
