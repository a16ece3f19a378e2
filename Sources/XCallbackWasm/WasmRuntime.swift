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

    /// An upper bound of the fuel (about one unit per WebAssembly operator)
    /// this interpreter burns in a second of one core, from measuring a
    /// tight loop (docs/wasm.md): a call's budget is this times `--timeout`,
    /// so a module that loops is stopped by running out of fuel no later
    /// than the deadline on a machine this fast, and later on a slower one.
    /// Its request is answered `Timeout` by the deadline either way: fuel
    /// only frees the thread and the instance.
    public static let fuelPerSecond: UInt64 = 1_000_000_000

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
        let fraction = UInt64(clamping: max(attoseconds, 0) / 1_000_000_000) * (fuelPerSecond / 1_000_000_000)
        guard !whole.overflow else { return .max - 1 }
        let (total, overflow) = whole.partialValue.addingReportingOverflow(fraction)
        return overflow ? .max - 1 : max(total, 1_000_000)
    }
}
