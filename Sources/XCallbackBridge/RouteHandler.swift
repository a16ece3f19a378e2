import CXCallback

/// What one registered route runs inside its plug-in: a C handler that
/// completes a reply token (now or later, from any thread), or a bound C
/// function the host calls through libffi and answers for at once.
public enum RouteHandler: Sendable {
    /// `register_action`, `register_controller_action`, `register_pattern`.
    case native(NativeHandler)
    /// `register_function`, or a function declared by a binding manifest.
    case bound(BoundFunction)

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
        }
    }

    /// The `user_data` to pass with ``function``: the plug-in's own, or the
    /// bound function (kept alive by the registration holding it).
    public var userData: UnsafeMutableRawPointer? {
        switch self {
        case .native(let handler): return handler.userData
        case .bound(let function): return Unmanaged.passUnretained(function).toOpaque()
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
}
