#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import WasmKit

/// How fast this process's interpreter burns fuel, measured on a loop.
enum FuelCalibration {
    /// `(module (func (export "spin") (param i32) (loop local.get 0 i32.const 1
    /// i32.sub local.tee 0 br_if 0)))`, assembled by hand: the bridge below
    /// the tests has no WAT.
    static let spinModule: [UInt8] = [
        0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00,  // \0asm, version 1
        0x01, 0x05, 0x01, 0x60, 0x01, 0x7F, 0x00,  // types: (i32) -> ()
        0x03, 0x02, 0x01, 0x00,  // functions: one of type 0
        0x07, 0x08, 0x01, 0x04, 0x73, 0x70, 0x69, 0x6E, 0x00, 0x00,  // export "spin"
        0x0A, 0x10, 0x01, 0x0E, 0x00,  // code: one body of 14 bytes, no locals
        0x03, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, 0x0D, 0x00, 0x0B, 0x0B,
    ]

    /// Iterations of each run: a few milliseconds in a release build.
    static let iterations: UInt32 = 200_000

    /// Four times the best rate of three runs, in fuel per second; nil if
    /// the loop could not be run (the caller falls back to a constant).
    static func measure(on engine: Engine) -> UInt64? {
        guard let module = try? parseWasm(bytes: spinModule) else { return nil }
        let store = Store(engine: engine)
        guard let instance = try? module.instantiate(store: store),
              let spin = instance.exports[function: "spin"] else { return nil }
        let clock = ContinuousClock()
        var best = 0.0
        for _ in 0..<3 {
            let budget = UInt64.max - 1
            store.fuel = Fuel(remaining: budget)
            let start = clock.now
            guard (try? spin.invoke([.i32(iterations)])) != nil, let left = store.fuel?.remaining else { return nil }
            let (seconds, attoseconds) = (clock.now - start).components
            let elapsed = Double(seconds) + Double(attoseconds) / 1e18
            if elapsed > 0 { best = max(best, Double(budget - left) / elapsed) }
        }
        guard best > 0 else { return nil }
        return UInt64(min(max(best * 4, 1e6), 1e12))
    }
}
#endif
