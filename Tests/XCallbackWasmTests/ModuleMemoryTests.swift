#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Testing
import WasmKit
@testable import XCallbackWasm

/// Every number a module hands the host may be anything: reads and writes
/// of its memory are checked, in 64 bits, before they happen, and a bad one
/// is an error naming the function, never a trap of the host.
@Suite("Guest memory")
struct ModuleMemoryTests {
    /// One page (64 KiB) of memory, "hello" at 100.
    static func memory() throws -> ModuleMemory {
        let store = Store(engine: Engine())
        let memory = try Memory(store: store, type: MemoryType(min: 1, max: 1))
        memory.withUnsafeMutableBufferPointer(offset: 100, count: 5) { buffer in
            buffer.copyBytes(from: Array("hello".utf8))
        }
        return ModuleMemory(memory: memory)
    }

    @Test("a string inside the memory is read")
    func inside() throws {
        #expect(try Self.memory().string(100, 5, in: "log") == "hello")
        #expect(try Self.memory().string(65_535, 0, in: "log") == "")
        #expect(try Self.memory().string(65_536, 0, in: "log") == "")
    }

    @Test("ranges past the end, at the top of the address space, or too long are refused",
          arguments: [(UInt32(65_532), UInt32(5)), (UInt32.max, UInt32(1)), (UInt32.max, UInt32.max),
                      (UInt32(65_537), UInt32(0)), (UInt32(0), UInt32(2 << 20))])
    func outside(pointer: UInt32, length: UInt32) throws {
        let memory = try Self.memory()
        #expect(throws: ModuleMemoryError.self) { try memory.string(pointer, length, in: "log") }
        #expect(throws: ModuleMemoryError.self) { try memory.copy("x", to: pointer, capacity: length == 0 ? UInt32(1) : length, in: "request_url") }
    }

    @Test("the error names the function and the range")
    func message() throws {
        let memory = try Self.memory()
        do throws(ModuleMemoryError) {
            _ = try memory.string(0xFFFF_FFF0, 100, in: "request_parameter")
            Issue.record("no error")
        } catch {
            #expect(error.description.contains("xcallback.request_parameter"))
            #expect(error.description.contains("4294967280") && error.description.contains("65536"))
        }
    }

    @Test("a copy fills at most the buffer and says the whole length")
    func shortBuffer() throws {
        let memory = try Self.memory()
        #expect(try memory.copy("greetings", to: 200, capacity: 4, in: "request_url") == 9)
        #expect(try memory.string(200, 4, in: "log") == "gree")
        #expect(try memory.copy("greetings", to: 65_535, capacity: 0, in: "request_url") == 9)
    }

    @Test("bytes that are not UTF-8 are refused")
    func notUTF8() throws {
        let memory = try Self.memory()
        memory.memory.withUnsafeMutableBufferPointer(offset: 300, count: 2) { $0.copyBytes(from: [0xC3, 0x28]) }
        #expect(throws: ModuleMemoryError.self) { try memory.string(300, 2, in: "log") }
    }
}
#endif
