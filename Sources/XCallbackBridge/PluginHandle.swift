import CXCallback
import Logging
import XCallbackRouting
import XCallbackSystem

/// A plug-in's handler function and its user data, as registered.
public struct NativeHandler: @unchecked Sendable {
    // @unchecked: the function pointer and user data belong to the plug-in,
    // which promises in xcallback.h that handlers may run on any thread.
    public let function: xcallback_handler
    public let userData: UnsafeMutableRawPointer?
}

/// One route a plug-in registered, in registration order.
public struct Registration: Sendable {
    public let pattern: RoutePattern
    public let handler: RouteHandler
}

/// A route a plug-in asked for and did not get: another plug-in, loaded
/// first, owns one of the same shape.
public struct RefusedRoute: Sendable, Equatable {
    public var pattern: String
    public var owner: String

    public init(pattern: String, owner: String) {
        self.pattern = pattern
        self.owner = owner
    }
}

/// The host's side of `xcallback_plugin *`: who the plug-in is, and what it
/// registered. The pointer a plug-in holds is this object's address; the
/// object is retained for the life of the process because plug-ins may keep
/// the pointer until shutdown and are never unloaded.
public final class PluginHandle: Sendable {
    public let name: String
    public let logger: Logger
    /// Returns the owner of a same-shape route in another plug-in, if any:
    /// the host's policy is that an existing owner keeps its route.
    private let conflictOwner: @Sendable (RoutePattern) -> String?
    private let state = Lock(State())

    private struct State {
        var registering = false
        var registrations: [Registration] = []
        var refused: [RefusedRoute] = []
    }

    public init(name: String, logger: Logger, conflictOwner: @escaping @Sendable (RoutePattern) -> String? = { _ in nil }) {
        self.name = name
        var logger = logger
        logger[metadataKey: "plugin"] = "\(name)"
        self.logger = logger
        self.conflictOwner = conflictOwner
    }

    public var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    public static func from(_ pointer: OpaquePointer?) -> PluginHandle? {
        guard let pointer else { return nil }
        return Unmanaged<PluginHandle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// Keeps the handle alive for the rest of the process (see the type's note).
    public func retainForever() -> PluginHandle {
        _ = Unmanaged.passRetained(self)
        return self
    }

    public var registrations: [Registration] { state.withLock { $0.registrations } }
    /// Routes refused because another plug-in owns one of the same shape.
    public var refused: [RefusedRoute] { state.withLock { $0.refused } }

    public func beginRegistration() { state.withLock { $0.registering = true } }
    public func endRegistration() { state.withLock { $0.registering = false } }

    /// Adds a route with a C handler on behalf of the plug-in; returns an
    /// `XCALLBACK_*` status.
    public func register(_ makePattern: () throws(RoutePatternError) -> RoutePattern,
                  handler: xcallback_handler?, userData: UnsafeMutableRawPointer?) -> Int32 {
        guard let handler else { return Int32(XCALLBACK_ERR_INVALID_ARGUMENT) }
        return register(makePattern, .native(NativeHandler(function: handler, userData: userData)))
    }

    /// Adds a route on behalf of the plug-in; returns an `XCALLBACK_*` status.
    public func register(_ makePattern: () throws(RoutePatternError) -> RoutePattern, _ handler: RouteHandler) -> Int32 {
        let pattern: RoutePattern
        do {
            pattern = try makePattern()
        } catch {
            logger.error("refused route: \(error)")
            return Int32(XCALLBACK_ERR_BAD_PATTERN)
        }
        if let owner = conflictOwner(pattern) {
            logger.error("refused route \(pattern): \(PluginLoader.refusal(of: pattern, owner: owner))")
            state.withLock { $0.refused.append(RefusedRoute(pattern: pattern.text, owner: owner)) }
            return Int32(XCALLBACK_ERR_ROUTE_CONFLICT)
        }
        return state.withLock { state in
            guard state.registering else {
                return Int32(XCALLBACK_ERR_NOT_REGISTERING)
            }
            if state.registrations.contains(where: { $0.pattern == pattern }) {
                logger.warning("route \(pattern) registered twice; the first registration wins, the second is reached only when the first declines")
            }
            state.registrations.append(Registration(pattern: pattern, handler: handler))
            return Int32(XCALLBACK_OK)
        }
    }
}
