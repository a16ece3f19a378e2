import Logging
import XCallbackRouting
import XCallbackSystem

/// A kind of plug-in file other than a shared library or a binding
/// manifest, loaded by a module above the bridge (`.wasm`, by
/// XCallbackWasm): the loader hands it a file it opened and checked as it
/// checks a `.so`, and keeps nothing else of it.
///
/// A protocol here, an implementation above, so that the host and its
/// workers load such a file through ``PluginLoader`` without importing the
/// module (and its runtime) that reads it: the command line installs the
/// formats it carries (``PluginFormats/install(_:)``) before anything loads.
public protocol PluginFormat: Sendable {
    /// The file name suffix that marks the format (`.wasm`).
    var suffix: String { get }

    /// Reads `file` (opened and checked; the format closes it) and registers
    /// its routes through a ``PluginHandle`` it makes, as `xcallback_plugin_register`
    /// would. `conflictOwner` is the loader's (the host's scheme refused);
    /// `security`, the checks for any other file it reads.
    func load(
        _ file: PluginFile,
        path: String,
        logger: Logger,
        security: FileSecurity,
        conflictOwner: @escaping @Sendable (RoutePattern) -> String?
    ) throws(PluginLoadError) -> LoadedPlugin
}

/// The plug-in formats this process can load beyond `.so` and binding
/// manifests: empty until the command line installs its own.
public enum PluginFormats {
    private static let installed = Lock<[any PluginFormat]>([])

    /// Adds `format`, once per suffix (a second install of a suffix is ignored).
    public static func install(_ format: any PluginFormat) {
        installed.withLock { formats in
            guard !formats.contains(where: { $0.suffix == format.suffix }) else { return }
            formats.append(format)
        }
    }

    /// The installed format whose suffix `path` ends with, if any.
    public static func format(for path: String) -> (any PluginFormat)? {
        installed.withLock { formats in formats.first { path.hasSuffix($0.suffix) } }
    }

    /// The suffixes of the installed formats.
    public static var suffixes: [String] { installed.withLock { $0.map(\.suffix) } }
}
