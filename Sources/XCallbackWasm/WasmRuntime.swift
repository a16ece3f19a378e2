#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import WasmKit
import XCallbackSystem

/// The process's one WebAssembly engine and the budget of every call.
public enum WasmRuntime {
    /// Fuel metering on: it is what bounds a call (WasmKit 0.4.2 has no
    /// other way to stop running code). Software bounds checks: the
    /// `mprotect` strategy reserves 8 GiB of address space per memory, which
    /// a worker's `memory` ceiling (RLIMIT_DATA) refuses, and handles
    /// SIGSEGV, which is the host's crash report's to handle.
    static let engine = Engine(configuration: EngineConfiguration(memoryBoundsChecking: .software, fuelMetering: true))

    /// The fuel (about one unit per WebAssembly operator) this interpreter
    /// burns in a second, with room to spare: the best of three short runs
    /// of a loop, measured once per process (a few milliseconds in a release
    /// build), times four. A call's budget is this times `--timeout`, so a
    /// module that loops runs out of fuel within a few timeouts, and a
    /// handler that works hard is not stopped before its deadline unless
    /// the machine was four times faster when measured. Its request is
    /// answered `Timeout` by the deadline either way: fuel frees the thread
    /// and the instance (WasmKit 0.4.2 cannot interrupt running code).
    public static let fuelPerSecond: UInt64 = FuelCalibration.measure(on: engine) ?? 1_000_000_000

    private static let timeout = Lock<Duration>(.seconds(30))

    /// The host's `--timeout`, which sizes every call's fuel budget. Set by
    /// `run` before it loads plug-ins; a worker keeps the default, since its
    /// host stops a worker that hangs.
    public static var callTimeout: Duration {
        get { timeout.withLock { $0 } }
        set { timeout.withLock { $0 = newValue } }
    }

    /// The fuel one call (or one instantiation and registration) may burn.
    static var callBudget: UInt64 {
        let (seconds, attoseconds) = callTimeout.components
        let whole = UInt64(clamping: max(seconds, 0)).multipliedReportingOverflow(by: fuelPerSecond)
        let fraction = UInt64((Double(max(attoseconds, 0)) / 1e18 * Double(fuelPerSecond)).rounded())
        guard !whole.overflow else { return .max - 1 }
        let (total, overflow) = whole.partialValue.addingReportingOverflow(fraction)
        return overflow ? .max - 1 : max(total, 1_000_000)
    }
}
#endif
