/// What a binary built without the package's trait Wasm says when asked
/// for WebAssembly plug-ins (`sdk --wasm`, `new --language wasm`).
enum WasmTrait {
    static let missing = "this xcallback was built without WebAssembly plug-ins: build it with `swift build --traits Wasm` (docs/wasm.md)"
}
