#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Foundation
import Testing
@testable import XCallbackWasm

/// `xcallback sdk --wasm` declares exactly the host's functions: each one
/// of the import table, under its import name, with as many parameters.
@Suite("The wasm ABI's C header")
struct WasmHeaderTests {
    /// The declaration of import `name` in the header: what follows its
    /// attribute, up to the semicolon.
    static func declaration(of name: String) -> String? {
        guard let start = WasmHeader.text.range(of: "XCALLBACK_WASM_IMPORT(\(name)) ") else { return nil }
        let rest = WasmHeader.text[start.upperBound...]
        return rest.firstIndex(of: ";").map { String(rest[..<$0]) }
    }

    @Test("every host function is declared, with its number of parameters", arguments: WasmImports.functions.keys.sorted())
    func declared(name: String) throws {
        let declaration = try #require(Self.declaration(of: name), "\(name) is not in the header")
        let function = try #require(WasmImports.functions[name])
        let list = declaration[declaration.index(after: declaration.firstIndex(of: "(")!)...].dropLast()
        let count = list.trimmingCharacters(in: .whitespacesAndNewlines) == "void" ? 0 : list.split(separator: ",").count
        #expect(count == function.parameters.count, "\(name): \(count) in the header, \(function.parameters.count) in the host")
        #expect(declaration.contains("xcallback_\(name)("))
    }

    @Test("the header declares nothing the host does not provide, and states the host's version")
    func nothingElse() {
        let declared = WasmHeader.text.components(separatedBy: "XCALLBACK_WASM_IMPORT(").dropFirst(2).map { $0.prefix { $0 != ")" } }
        #expect(Set(declared.map(String.init)) == Set(WasmImports.functions.keys))
        #expect(WasmHeader.text.contains("#define XCALLBACK_WASM_ABI_MAJOR \(WasmABI.major)\n"))
        #expect(WasmHeader.text.contains("#define XCALLBACK_WASM_ABI_MINOR \(WasmABI.minor)\n"))
    }
}
#endif
