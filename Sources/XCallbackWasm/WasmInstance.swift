#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Logging
@_spi(Fuzzing) import WasmKit

/// One instance of a plug-in's module, in a store of its own: the memory
/// and globals of one copy of the plug-in. It runs one call at a time, on
/// whichever thread took it from its plug-in's pool (a `Store` is
/// thread-confined, hence `@unchecked Sendable` and the pool's hand-over).
final class WasmInstance: @unchecked Sendable {
    let store: Store
    let instance: Instance
    let state: WasmInstanceState
    /// Imports the host does not have (stubs that end a call reaching them).
    let unknownImports: [String]
    /// `xcallback_handle`, looked up once: nil when the module lacks it.
    let handle: Function?
    /// The interpreter's stack, kept for the instance's calls: WasmKit's
    /// plain `invoke` allocates one (512 KiB) for every call and frees it.
    private var stack: ExecutionStack

    /// Instantiates `module` with the ABI's imports, its start function (if
    /// any) run within one call's fuel, and its memory under `limitBytes`.
    init(module: Module, state: WasmInstanceState, limitBytes: Int) throws {
        store = Store(engine: WasmRuntime.engine)
        store.resourceLimiter = WasmMemoryLimiter(limitBytes: limitBytes)
        store.fuel = Fuel(remaining: WasmRuntime.callBudget)
        stack = ExecutionStack(engine: WasmRuntime.engine)
        self.state = state
        let (imports, unknown) = WasmImports.make(for: module, store: store, state: state)
        unknownImports = unknown
        instance = try module.instantiate(store: store, imports: imports)
        handle = Self.function(WasmABI.handleExport, of: instance, parameters: [.i32], results: [])
        if let memory = instance.exports[memory: WasmABI.memoryExport] {
            state.memory = ModuleMemory(memory: memory)
        }
    }

    /// The exported function `name`, if it has exactly this type.
    func function(_ name: String, parameters: [ValueType], results: [ValueType]) -> Function? {
        Self.function(name, of: instance, parameters: parameters, results: results)
    }

    private static func function(_ name: String, of instance: Instance, parameters: [ValueType], results: [ValueType]) -> Function? {
        guard let function = instance.exports[function: name],
              function.type == FunctionType(parameters: parameters, results: results) else { return nil }
        return function
    }

    /// Calls `function` within a fresh budget of one call's fuel.
    func invoke(_ function: Function, _ arguments: [Value] = []) throws -> [Value] {
        store.fuel = Fuel(remaining: WasmRuntime.callBudget)
        return try function.invoke(arguments, on: &stack)
    }
}
#endif
