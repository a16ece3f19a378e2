#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Logging
import WasmKit
import XCallbackBridge
import XCallbackRouting
import XCallbackSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `NAME.wasm` in a plug-in folder: a WebAssembly module speaking the wasm
/// ABI (``WasmABI``), run by WasmKit in whichever process loads it (the
/// host with `--isolation none`, a worker with `--isolation process`).
public struct WasmPluginFormat: PluginFormat {
    public init() {}

    public var suffix: String { ".wasm" }

    /// Largest module read: a plug-in is kilobytes to a few megabytes.
    public static let maxModuleBytes = 64 << 20

    public func load(
        _ file: PluginFile,
        path: String,
        logger: Logger,
        security: FileSecurity,
        conflictOwner: @escaping @Sendable (RoutePattern) -> String?
    ) throws(PluginLoadError) -> LoadedPlugin {
        let bytes: [UInt8]
        do {
            defer { file.close() }
            bytes = try Self.read(file, path: path)
        }
        let module: Module
        do {
            module = try parseWasm(bytes: bytes)
        } catch {
            throw PluginLoadError(path: path, reason: .cannotOpen("not a valid WebAssembly module: \(WasmPlugin.describe(error))"))
        }
        let plugin = WasmPlugin(module: module, path: path, name: Self.defaultName(of: path),
                                memoryLimitBytes: try Self.memoryLimitBytes(forPluginAt: path, security: security),
                                logger: logger)
        return try plugin.load(conflictOwner: conflictOwner)
    }

    /// The name a module that calls no `plugin_info` goes by: its file's, if
    /// that is a plug-in name.
    static func defaultName(of path: String) -> String {
        let base = CapabilityDeclaration.baseName(of: path)
        return PluginLoader.isValidName(base) ? base : "wasm"
    }

    /// The ceiling on each instance's memory: the `memory` capability its
    /// capability file (`NAME.caps.toml`) declares, else the default. In a
    /// worker the same number is also the worker's own ceiling, which the
    /// module's memory counts against.
    static func memoryLimitBytes(forPluginAt path: String, security: FileSecurity) throws(PluginLoadError) -> Int {
        let sidecar = CapabilityDeclaration.sidecarPath(for: path)
        var info = stat()
        var mebibytes = Capabilities.default.memoryMiB
        if lstat(sidecar, &info) == 0, let text = try? Self.text(of: sidecar, security: security) {
            do {
                mebibytes = try CapabilityDeclaration.parse(text, file: sidecar).memoryMiB
            } catch {
                throw PluginLoadError(path: path, reason: .badCapabilities(error.description))
            }
        }
        return max(mebibytes, 1) << 20
    }

    /// Read where it can be: a worker's sandbox may hide the file, and its
    /// own ceiling, set by its host from the same file, stands there.
    private static func text(of path: String, security: FileSecurity) throws -> String {
        let file = try PluginFile.open(path, security: security)
        defer { file.close() }
        return try file.readText(limit: 1 << 20) { .badCapabilities($0) }
    }

    private static func read(_ file: PluginFile, path: String) throws(PluginLoadError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = pread(file.descriptor, &chunk, chunk.count, off_t(bytes.count))
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                throw PluginLoadError(path: path, reason: .cannotOpen(String(cString: strerror(errno))))
            }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > maxModuleBytes {
                throw PluginLoadError(path: path, reason: .cannotOpen("larger than \(maxModuleBytes) bytes"))
            }
        }
    }
}
#endif
