#if Wasm  // the package's Wasm trait: swift build --traits Wasm
/// The wasm ABI: what a WebAssembly plug-in imports from the host and
/// exports to it. It mirrors `xcallback.h` (docs/wasm.md): the same
/// registrations, request accessors, replies and log, as functions of one
/// import module, with strings passed as (pointer, length) pairs in the
/// module's own memory and copied out into buffers the module provides.
///
/// Versioned like the C ABI: a module states the version it was built
/// against through the export ``versionExport``; a different major, or a
/// newer minor, is refused at load with a message naming both.
public enum WasmABI {
    /// The version this host speaks.
    public static let major: UInt32 = 1
    public static let minor: UInt32 = 0

    /// The one import module every host function lives in.
    public static let importModule = "xcallback"

    /// `() -> i32`: the version the module was built for, `major << 16 | minor`.
    public static let versionExport = "xcallback_abi_version"
    /// `() -> i32`: registers the module's routes; 0 (`XCALLBACK_OK`) or a status.
    public static let registerExport = "xcallback_register"
    /// `(i32 handler) -> ()`: runs the handler a registration numbered.
    public static let handleExport = "xcallback_handle"
    /// The module's linear memory, through which every string passes.
    public static let memoryExport = "memory"

    /// The statuses the host functions return, as in `xcallback.h`.
    public enum Status: Int32 {
        case ok = 0
        case invalidArgument = -1
        case badPattern = -2
        case routeConflict = -3
        case notRegistering = -4
        case alreadyCompleted = -5
    }

    /// What a copying accessor returns for something the request does not
    /// have (an absent parameter, an index past the end): `-1`.
    public static let absent: Int32 = -1

    /// The longest string the host reads from a module (a pattern, a
    /// parameter, a log line): what is longer is refused, so a length the
    /// module passes never sizes a large host allocation.
    public static let maxStringBytes = 1 << 20
}
#endif
