#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Logging
import XCallbackBridge
import XCallbackRouting
import XCallbackSystem

/// What the host functions of one instance read and change: the call in
/// progress, and, while `xcallback_register` runs in the first instance,
/// the registration. Confined to the thread running the instance (an
/// instance runs one call at a time), so it needs no lock.
final class WasmInstanceState {
    var call: WasmCall?
    var registrar: WasmRegistrar?
    /// A later instance running the registration: its registrations are
    /// answered `XCALLBACK_OK` and ignored (the first instance's stand).
    var replaying = false
    var memory: ModuleMemory?
    var logger: Logger
    /// The plug-in's name: the domain of an error reply that names none.
    var pluginName: String

    init(pluginName: String, logger: Logger) {
        self.pluginName = pluginName
        self.logger = logger
    }

    /// The memory, or the error naming `function` when a module calls in
    /// before it has one (from its start function, before instantiation ended).
    func guestMemory(in function: String) throws(ModuleMemoryError) -> ModuleMemory {
        guard let memory else {
            throw ModuleMemoryError(function: function, problem: "called before the module's memory was available")
        }
        return memory
    }
}

/// The registration of a module's routes: during `xcallback_register` of
/// the first instance only (the others run it too, for the module's own
/// set-up, with their registrations ignored).
final class WasmRegistrar {
    var name: String
    var version = ""
    var summary = ""
    private(set) var handle: PluginHandle?
    private let logger: Logger
    private let conflictOwner: @Sendable (RoutePattern) -> String?
    private let makeHandler: (Int32) -> any HostedHandler

    init(name: String, logger: Logger, conflictOwner: @escaping @Sendable (RoutePattern) -> String?,
         makeHandler: @escaping (Int32) -> any HostedHandler) {
        self.name = name
        self.logger = logger
        self.conflictOwner = conflictOwner
        self.makeHandler = makeHandler
    }

    /// The handle, made at the first route: the name is settled then
    /// (`plugin_info` must come first).
    func settledHandle() -> PluginHandle {
        if let handle { return handle }
        let handle = PluginHandle(name: name, logger: logger, conflictOwner: conflictOwner).retainForever()
        handle.beginRegistration()
        self.handle = handle
        return handle
    }

    func register(_ makePattern: () throws(RoutePatternError) -> RoutePattern, handler: Int32) -> Int32 {
        settledHandle().register(makePattern, .hosted(makeHandler(handler)))
    }
}
#endif
