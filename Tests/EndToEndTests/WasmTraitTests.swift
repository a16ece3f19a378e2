#if !Wasm  // built without the package's trait Wasm: WebAssembly plug-ins are not there, and say so
import Testing

/// docs/wasm.md, "Building it": a binary built without the trait Wasm
/// says how to get WebAssembly plug-ins when asked for them.
@Suite("Built without WebAssembly plug-ins", .ownThreads)
struct WasmTraitTests {
    @Test("sdk --wasm and new --language wasm name the trait")
    func saysHow() throws {
        let sdk = try xcallback(["sdk", "--wasm"])
        #expect(!sdk.status.isSuccess && sdk.stderr.contains("--traits Wasm"), "\(sdk.stderr)")
        // Refused in validation, before the folder would be made.
        let new = try xcallback(["new", "wasm_trait_probe", "--language", "wasm"])
        #expect(!new.status.isSuccess && new.stderr.contains("--traits Wasm"), "\(new.stderr)")
    }
}
#endif
