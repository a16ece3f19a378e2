#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Logging
import WasmKit
import XCallbackBridge
import XCallbackRouting
import XCallbackSystem
import XCallbackURL

/// A WebAssembly plug-in loaded into this process: its module, parsed and
/// checked once, and the instances that run its handlers. A call takes an
/// idle instance, or makes one; an instance whose call ended badly (a trap,
/// its memory ceiling, its fuel, a bad pointer) is dropped, never reused,
/// since the module's own state may be half-changed, and the next call
/// gets a fresh one.
final class WasmPlugin: Sendable {
    let module: Module
    let path: String
    let memoryLimitBytes: Int
    private let identity: Lock<(name: String, logger: Logger)>
    private let idle = Lock<[WasmInstance]>([])

    /// Instances kept idle at most; more are made under load and dropped after.
    static let maxIdle = 8

    init(module: Module, path: String, name: String, memoryLimitBytes: Int, logger: Logger) {
        self.module = module
        self.path = path
        self.memoryLimitBytes = memoryLimitBytes
        var logger = logger
        logger[metadataKey: "plugin"] = "\(name)"
        identity = Lock((name, logger))
    }

    var name: String { identity.withLock { $0.name } }
    var logger: Logger { identity.withLock { $0.logger } }

    // MARK: loading

    /// Makes the first instance, checks the module against the ABI, and
    /// runs its registration: the plug-in as the loader returns it.
    func load(conflictOwner: @escaping @Sendable (RoutePattern) -> String?) throws(PluginLoadError) -> LoadedPlugin {
        func refuse(_ message: String) -> PluginLoadError {
            PluginLoadError(path: path, reason: .other(message))
        }
        let registrar = WasmRegistrar(name: name, logger: logger, conflictOwner: conflictOwner) { id in
            WasmRouteHandler(plugin: self, id: id)
        }
        let state = WasmInstanceState(pluginName: name, logger: logger)
        state.registrar = registrar
        let first: WasmInstance
        do {
            first = try WasmInstance(module: module, state: state, limitBytes: memoryLimitBytes)
        } catch {
            throw refuse("cannot instantiate the WebAssembly module: \(Self.describe(error))")
        }
        let version = try checkVersion(of: first)
        if !first.unknownImports.isEmpty {
            throw refuse("imports \(first.unknownImports.joined(separator: ", ")), which this host (wasm ABI \(WasmABI.major).\(WasmABI.minor), import module '\(WasmABI.importModule)') does not provide")
        }
        guard state.memory != nil else {
            throw refuse("exports no memory named '\(WasmABI.memoryExport)', through which the host passes strings")
        }
        guard first.handle != nil else {
            throw refuse("exports no function \(WasmABI.handleExport) of type (i32) -> ()")
        }
        guard let register = first.function(WasmABI.registerExport, parameters: [], results: [.i32]) else {
            throw refuse("exports no function \(WasmABI.registerExport) of type () -> i32")
        }
        let status: Int32
        do {
            status = Int32(bitPattern: try first.invoke(register).first?.i32 ?? 0)
        } catch {
            throw refuse("\(WasmABI.registerExport) ended: \(Self.describe(error))")
        }
        state.registrar = nil
        let handle = registrar.settledHandle()
        handle.endRegistration()
        guard status == WasmABI.Status.ok.rawValue else {
            throw PluginLoadError(path: path, reason: .registrationFailed(status: status))
        }
        identity.withLock { identity in
            identity.name = registrar.name
            identity.logger[metadataKey: "plugin"] = "\(registrar.name)"
        }
        state.pluginName = registrar.name
        state.logger = logger
        giveBack(first)
        let info = PluginInfo(path: path, name: registrar.name, version: registrar.version, summary: registrar.summary,
                              abiMajor: Int(version.major), abiMinor: Int(version.minor))
        return LoadedPlugin(info: info, handle: handle, registrations: handle.registrations, shutdown: nil)
    }

    /// The version the module states, if this host speaks it.
    private func checkVersion(of instance: WasmInstance) throws(PluginLoadError) -> (major: UInt32, minor: UInt32) {
        func refuse(_ message: String) -> PluginLoadError {
            PluginLoadError(path: path, reason: .other(message))
        }
        guard let export = instance.function(WasmABI.versionExport, parameters: [], results: [.i32]) else {
            throw refuse("not an xcallback wasm plug-in: it exports no function \(WasmABI.versionExport) of type () -> i32")
        }
        let word: UInt32
        do {
            word = try instance.invoke(export).first?.i32 ?? 0
        } catch {
            throw refuse("\(WasmABI.versionExport) ended: \(Self.describe(error))")
        }
        let (major, minor) = (word >> 16, word & 0xFFFF)
        let host = "\(WasmABI.major).\(WasmABI.minor)"
        guard major == WasmABI.major else {
            throw refuse("wasm ABI major differs: the module was built for \(major).\(minor), this host speaks \(host); rebuild it against this host's header (`xcallback sdk --wasm`)")
        }
        guard minor <= WasmABI.minor else {
            throw refuse("wasm ABI minor is newer: the module was built for \(major).\(minor), this host speaks \(host); upgrade xcallback")
        }
        return (major, minor)
    }

    // MARK: calls

    /// Runs handler `id` for one request: its reply, or nil when its fuel
    /// ran out (the deadline answers `Timeout`).
    func run(handler id: Int32, request: RequestFields, route: String) -> HandlerResult? {
        let instance: WasmInstance
        do {
            instance = try takeInstance()
        } catch {
            return .outcome(HostError.crashed("plug-in '\(name)': a new instance of its module failed: \(Self.describe(error))"))
        }
        let call = WasmCall(request: request, route: route)
        instance.state.call = call
        defer { instance.state.call = nil }
        do {
            guard let handle = instance.handle else {
                return .outcome(HostError.crashed("plug-in '\(name)' has no \(WasmABI.handleExport)"))
            }
            _ = try instance.invoke(handle, [.i32(UInt32(bitPattern: id))])
        } catch {
            return ending(error, request: request)
        }
        giveBack(instance)
        return call.result ?? .outcome(HostError.crashed(
            "plug-in '\(name)': \(WasmABI.handleExport) returned without replying (xcallback.reply_success, reply_error, reply_cancel or reply_decline)"))
    }

    /// What a call that threw comes to; its instance is not given back.
    private func ending(_ error: any Error, request: RequestFields) -> HandlerResult? {
        let name = name
        switch error {
        case let limit as WasmMemoryLimitExceeded:
            logger.error("request \(request.id): memory grown to \(limit.requestedBytes) bytes, past the ceiling of \(limit.limitBytes) (the memory capability); instance replaced")
            return .outcome(HostError.memoryLimit(
                "plug-in '\(name)' grew its memory to \(limit.requestedBytes) bytes, past its ceiling of \(limit.limitBytes) bytes (the memory capability)"))
        case let violation as ModuleMemoryError:
            logger.error("request \(request.id): \(violation); instance replaced")
            return .outcome(HostError.crashed("plug-in '\(name)': \(violation)"))
        default:
            let reason = Self.describe(error)
            if Self.isAllocationFailure(error) {
                logger.error("request \(request.id): the process could not allocate the module's memory (\(reason)); instance replaced")
                return .outcome(HostError.memoryLimit(
                    "plug-in '\(name)' grew its memory past what its process may allocate (\(reason)): in a worker, the memory capability is the whole worker's ceiling"))
            }
            if Self.isOutOfFuel(error) {
                logger.error("request \(request.id): the handler used up its time budget (fuel for --timeout); instance replaced")
                return nil
            }
            logger.error("request \(request.id): trapped: \(reason); instance replaced")
            return .outcome(HostError.crashed("plug-in '\(name)' trapped: \(reason)"))
        }
    }

    /// WasmKit 0.4.2 keeps a trap's reason `package`; its description is
    /// the one public word on it ("Trap: out of fuel").
    static func isOutOfFuel(_ error: any Error) -> Bool {
        error is Trap && "\(error)".hasPrefix("Trap: out of fuel")
    }

    /// WasmKit's word for an allocation of linear memory that failed (in a
    /// worker, at its RLIMIT_DATA), whether the memory was new or growing.
    static func isAllocationFailure(_ error: any Error) -> Bool {
        error is Trap && "\(error)".hasPrefix("Trap: initial memory size exceeds the resource limit")
    }

    /// A WasmKit error on one line: a trap's reason without its backtrace.
    static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        let line = text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? text
        return line.hasPrefix("Trap: ") ? String(line.dropFirst(6)) : line
    }

    private func takeInstance() throws -> WasmInstance {
        if let instance = idle.withLock({ $0.popLast() }) { return instance }
        let state = WasmInstanceState(pluginName: name, logger: logger)
        // Later instances run the registration too (the module may set
        // itself up there); their routes are the first instance's.
        state.replaying = true
        let instance = try WasmInstance(module: module, state: state, limitBytes: memoryLimitBytes)
        if let register = instance.function(WasmABI.registerExport, parameters: [], results: [.i32]) {
            _ = try instance.invoke(register)
        }
        state.replaying = false
        return instance
    }

    private func giveBack(_ instance: WasmInstance) {
        idle.withLock { idle in
            if idle.count < Self.maxIdle { idle.append(instance) }
        }
    }
}

/// One route's handler: a handler number of a plug-in's module.
final class WasmRouteHandler: HostedHandler {
    let plugin: WasmPlugin
    let id: Int32

    init(plugin: WasmPlugin, id: Int32) {
        self.plugin = plugin
        self.id = id
    }

    func call(_ request: RequestFields, route: String) -> HandlerResult? {
        plugin.run(handler: id, request: request, route: route)
    }
}
#endif
