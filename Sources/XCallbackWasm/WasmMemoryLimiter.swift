#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import WasmKit

/// A module grew its memory past its instance's ceiling (the `memory`
/// capability): the call ends with `MemoryLimit` and the instance is
/// replaced, as a worker that reaches its ceiling is.
struct WasmMemoryLimitExceeded: Error {
    var requestedBytes: Int
    var limitBytes: Int
}

/// The ceiling on one instance's linear memory. It throws rather than
/// refusing the growth (`memory.grow` would return -1 and the module go
/// on): a module that asks for more than it was granted ends at once, with
/// the outcome saying why, not later with some error of its own making.
/// The limit applies to the initial memory as well: a module that declares
/// more than its ceiling does not load.
final class WasmMemoryLimiter: ResourceLimiter {
    let limitBytes: Int

    init(limitBytes: Int) {
        self.limitBytes = limitBytes
    }

    func limitMemoryGrowth(to desired: Int) throws -> Bool {
        guard desired <= limitBytes else {
            throw WasmMemoryLimitExceeded(requestedBytes: desired, limitBytes: limitBytes)
        }
        return true
    }

    /// Tables hold function references, a few bytes each; 1 Mi of them is
    /// past any real module, and refusing more keeps `table.grow` from
    /// spending the host's memory where the memory ceiling does not look.
    func limitTableGrowth(to desired: Int) throws -> Bool {
        desired <= 1 << 20
    }
}
#endif
