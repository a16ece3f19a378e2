#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Logging
@_spi(Fuzzing) import WasmKit
import WasmParser
import XCallbackBridge
import XCallbackRouting
import XCallbackURL

/// The host functions of the import module `xcallback` (``WasmABI``), made
/// for one instance: each reads its arguments from the module through
/// ``ModuleMemory`` and acts on the instance's ``WasmInstanceState``.
///
/// Each is listed with its exact type; a module importing one with another
/// type is refused at load by WasmKit's import check.
enum WasmImports {
    typealias Body = @Sendable (WasmInstanceState, [Value]) throws -> [Value]

    struct HostFunction: Sendable {
        var parameters: [ValueType]
        var results: [ValueType]
        var body: Body
    }

    /// Every function of the wasm ABI, by name.
    static let functions: [String: HostFunction] = {
        var table: [String: HostFunction] = [:]
        func define(_ name: String, _ parameters: [ValueType], _ results: [ValueType], _ body: @escaping Body) {
            table[name] = HostFunction(parameters: parameters, results: results, body: body)
        }
        @Sendable func status(_ status: WasmABI.Status) -> [Value] { [.i32(UInt32(bitPattern: status.rawValue))] }
        @Sendable func int(_ value: Int32) -> [Value] { [.i32(UInt32(bitPattern: value))] }
        let i32 = ValueType.i32

        // Registration, only inside xcallback_register.
        define("plugin_info", [i32, i32, i32, i32, i32, i32], [i32]) { state, args in
            let memory = try state.guestMemory(in: "plugin_info")
            if state.replaying { return status(.ok) }
            guard let registrar = state.registrar else { return status(.notRegistering) }
            let name = try memory.string(args[0].i32, args[1].i32, in: "plugin_info")
            guard registrar.handle == nil else {
                state.logger.error("plugin_info must come before the first route; ignored")
                return status(.notRegistering)
            }
            guard PluginLoader.isValidName(name) else {
                state.logger.error("plugin_info: the name \"\(name)\" is not a plug-in name (1-64 of A-Z a-z 0-9 . _ -)")
                return status(.invalidArgument)
            }
            registrar.name = name
            registrar.version = try memory.string(args[2].i32, args[3].i32, in: "plugin_info")
            registrar.summary = try memory.string(args[4].i32, args[5].i32, in: "plugin_info")
            return status(.ok)
        }
        define("register_action", [i32, i32, i32, i32, i32], [i32]) { state, args in
            let memory = try state.guestMemory(in: "register_action")
            let scheme = try memory.string(args[0].i32, args[1].i32, in: "register_action")
            let action = try memory.string(args[2].i32, args[3].i32, in: "register_action")
            if state.replaying { return status(.ok) }
            guard let registrar = state.registrar else { return status(.notRegistering) }
            return int(registrar.register({ () throws(RoutePatternError) in
                try RoutePattern.action(scheme: scheme, action: action)
            }, handler: Int32(bitPattern: args[4].i32)))
        }
        define("register_pattern", [i32, i32, i32], [i32]) { state, args in
            let memory = try state.guestMemory(in: "register_pattern")
            let pattern = try memory.string(args[0].i32, args[1].i32, in: "register_pattern")
            if state.replaying { return status(.ok) }
            guard let registrar = state.registrar else { return status(.notRegistering) }
            return int(registrar.register({ () throws(RoutePatternError) in try RoutePattern(pattern) },
                                          handler: Int32(bitPattern: args[2].i32)))
        }

        // Request accessors: copy into (buffer, capacity), return the whole
        // length, or -1 for what the request does not have.
        func copying(_ name: String, _ extra: [ValueType], _ value: @escaping @Sendable (WasmCall, ModuleMemory, [Value]) throws -> String?) {
            define(name, extra + [i32, i32], [i32]) { state, args in
                let memory = try state.guestMemory(in: name)
                guard let call = state.call else { return int(WasmABI.absent) }
                guard let text = try value(call, memory, args) else {
                    // The buffer is checked even so: a bad pointer is found
                    // on the first call, not on the first value present.
                    _ = try memory.copy("", to: args[extra.count].i32, capacity: args[extra.count + 1].i32, in: name)
                    return int(WasmABI.absent)
                }
                return int(try memory.copy(text, to: args[extra.count].i32, capacity: args[extra.count + 1].i32, in: name))
            }
        }
        copying("request_url", []) { call, _, _ in call.request.url }
        copying("request_scheme", []) { call, _, _ in call.request.scheme }
        copying("request_source", []) { call, _, _ in call.request.source }
        copying("request_route", []) { call, _, _ in call.route }
        copying("request_argument", [i32, i32]) { call, memory, args in
            WasmCall.first(try memory.string(args[0].i32, args[1].i32, in: "request_argument"), in: call.request.arguments)
        }
        copying("request_parameter", [i32, i32]) { call, memory, args in
            WasmCall.first(try memory.string(args[0].i32, args[1].i32, in: "request_parameter"), in: call.request.parameters)
        }
        @Sendable func indexed(_ list: [QueryParameter], _ index: Value) -> QueryParameter? {
            let index = Int(index.i32)
            return index < list.count ? list[index] : nil
        }
        copying("request_parameter_name", [i32]) { call, _, args in indexed(call.request.parameters, args[0])?.name }
        copying("request_parameter_value", [i32]) { call, _, args in indexed(call.request.parameters, args[0])?.value }
        copying("request_argument_name", [i32]) { call, _, args in indexed(call.request.arguments, args[0])?.name }
        copying("request_argument_value", [i32]) { call, _, args in indexed(call.request.arguments, args[0])?.value }
        define("request_parameter_count", [], [i32]) { state, _ in
            int(Int32(clamping: state.call?.request.parameters.count ?? 0))
        }
        define("request_argument_count", [], [i32]) { state, _ in
            int(Int32(clamping: state.call?.request.arguments.count ?? 0))
        }
        define("request_id", [], [.i64]) { state, _ in [.i64(state.call?.request.id ?? 0)] }
        define("request_attempt", [], [i32]) { state, _ in [.i32(state.call?.request.attempt ?? 0)] }

        // The reply: parameters first, then exactly one of the four.
        define("reply_parameter", [i32, i32, i32, i32], [i32]) { state, args in
            let memory = try state.guestMemory(in: "reply_parameter")
            let name = try memory.string(args[0].i32, args[1].i32, in: "reply_parameter")
            let value = try memory.string(args[2].i32, args[3].i32, in: "reply_parameter")
            guard let call = state.call, call.result == nil else { return status(.alreadyCompleted) }
            guard !name.isEmpty else { return status(.invalidArgument) }
            call.replyParameters.append(QueryParameter(name: name, value: value))
            return status(.ok)
        }
        @Sendable func reply(_ call: WasmCall?, _ result: HandlerResult) -> [Value] {
            guard let call, call.result == nil else { return status(.alreadyCompleted) }
            call.result = result
            return status(.ok)
        }
        define("reply_success", [], [i32]) { state, _ in
            reply(state.call, .outcome(.success(state.call?.replyParameters ?? [])))
        }
        define("reply_error", [i32, i32, i32, i32, i32, i32], [i32]) { state, args in
            let memory = try state.guestMemory(in: "reply_error")
            let code = try memory.string(args[0].i32, args[1].i32, in: "reply_error")
            let message = try memory.string(args[2].i32, args[3].i32, in: "reply_error")
            let domain = try memory.string(args[4].i32, args[5].i32, in: "reply_error")
            guard !code.isEmpty else { return status(.invalidArgument) }
            var outcome = Outcome.error(code: code, message: message,
                                        domain: domain.isEmpty ? state.pluginName : domain)
            outcome.parameters += state.call?.replyParameters ?? []
            return reply(state.call, .outcome(outcome))
        }
        define("reply_cancel", [], [i32]) { state, _ in reply(state.call, .outcome(.cancel)) }
        define("reply_decline", [], [i32]) { state, _ in reply(state.call, .declined) }

        define("log", [i32, i32, i32], []) { state, args in
            let text = try state.guestMemory(in: "log").string(args[1].i32, args[2].i32, in: "log")
            switch Int32(bitPattern: args[0].i32) {
            case 0: state.logger.debug("\(text)")
            case 1: state.logger.info("\(text)")
            case 2: state.logger.warning("\(text)")
            default: state.logger.error("\(text)")
            }
            return []
        }
        return table
    }()

    /// The imports for one instance: every function the module imports
    /// from `xcallback` that the ABI has, with that instance's state; and
    /// what it imports that the host does not have, each as a stub that
    /// ends any call reaching it, so that the module still instantiates far
    /// enough to say which ABI version it wants (``unknown`` names them).
    static func make(for module: Module, store: Store, state: WasmInstanceState) -> (imports: Imports, unknown: [String]) {
        var imports = Imports()
        var unknown: [String] = []
        for entry in module.imports {
            let known = entry.module == WasmABI.importModule ? functions[entry.name] : nil
            if let known {
                imports.define(module: entry.module, name: entry.name,
                               Function(store: store, parameters: known.parameters, results: known.results) { _, args in
                                   try known.body(state, args)
                               })
                continue
            }
            unknown.append("\(entry.module).\(entry.name)")
            guard case .function(let typeIndex) = entry.descriptor, let type = module.functionType(at: typeIndex) else { continue }
            let name = "\(entry.module).\(entry.name)"
            imports.define(module: entry.module, name: entry.name, Function(store: store, type: type) { _, _ in
                throw WasmUnknownImport(name: name)
            })
        }
        return (imports, unknown)
    }
}

/// A module called a function it imports that this host does not have
/// (it loaded only far enough to be refused with its ABI version).
struct WasmUnknownImport: Error, CustomStringConvertible {
    var name: String
    var description: String { "called \(name), which this host does not provide" }
}
#endif
