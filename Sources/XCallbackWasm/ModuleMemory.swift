#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import WasmKit

/// A module passed the host a pointer and length that do not lie inside its
/// memory, or a string too long or not UTF-8. The call ends (`PluginCrashed`)
/// and the instance is replaced: a module that does this has lost track of
/// its own memory.
struct ModuleMemoryError: Error, CustomStringConvertible {
    var function: String
    var problem: String

    var description: String { "xcallback.\(function): \(problem)" }
}

/// Every read and write of a module's memory by the host, checked first.
///
/// The numbers come from the module, so any of them may be anything:
/// bounds are computed in 64 bits from the 32-bit values (no sum can
/// overflow) and compared with the memory's size at the moment of the
/// access, before WasmKit's own accessors, which stop the process on an
/// out-of-bounds range rather than throw.
struct ModuleMemory {
    let memory: Memory

    /// The checked range, or the error naming `function`.
    private func range(_ pointer: UInt32, _ length: UInt32, limit: Int, in function: String) throws(ModuleMemoryError) -> Range<Int> {
        let start = Int(pointer)
        let count = Int(length)
        guard count <= limit else {
            throw ModuleMemoryError(function: function, problem: "length \(count) is over the limit of \(limit) bytes")
        }
        let size = memory.byteCount
        guard start + count <= size else {
            throw ModuleMemoryError(
                function: function,
                problem: "the range at \(start) of \(count) bytes lies outside the module's memory of \(size) bytes")
        }
        return start..<(start + count)
    }

    /// The UTF-8 string at `pointer` of `length` bytes.
    func string(_ pointer: UInt32, _ length: UInt32, in function: String) throws(ModuleMemoryError) -> String {
        let range = try range(pointer, length, limit: WasmABI.maxStringBytes, in: function)
        guard !range.isEmpty else { return "" }
        let text = memory.withUnsafeBufferPointer(offset: UInt(range.lowerBound), count: range.count) { bytes in
            String(validating: bytes, as: UTF8.self)
        }
        guard let text else {
            throw ModuleMemoryError(function: function, problem: "the string at \(range.lowerBound) is not valid UTF-8")
        }
        return text
    }

    /// Copies as much of `text` as fits into the buffer at `pointer` of
    /// `capacity` bytes and returns its whole length, so that a module
    /// given a short buffer learns how long a one it needs (`snprintf`'s
    /// contract). The buffer is checked even when nothing is copied.
    func copy(_ text: String, to pointer: UInt32, capacity: UInt32, in function: String) throws(ModuleMemoryError) -> Int32 {
        let range = try range(pointer, capacity, limit: Int(UInt32.max), in: function)
        let utf8 = text.utf8
        let whole = utf8.count
        guard whole <= Int(Int32.max) else {
            throw ModuleMemoryError(function: function, problem: "the value is longer than an i32 can say")
        }
        let count = min(whole, range.count)
        if count > 0 {
            memory.withUnsafeMutableBufferPointer(offset: UInt(range.lowerBound), count: count) { buffer in
                buffer.copyBytes(from: utf8.prefix(count))
            }
        }
        return Int32(whole)
    }
}
#endif
