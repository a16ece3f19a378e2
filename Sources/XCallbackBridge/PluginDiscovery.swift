#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Lists the plug-in files of the plug-in directories: `.so` files (binding
/// manifests, and the files of installed formats such as `.wasm`), in a stable order (directories in the order given,
/// names sorted bytewise within each), each file once even when reached
/// twice through links or repeated directories.
public struct PluginDiscovery: Sendable {
    public var directories: [String]
    public var security: FileSecurity

    public init(directories: [String], security: FileSecurity) {
        self.directories = directories
        self.security = security
    }

    /// What a scan found.
    public struct Scan: Sendable {
        /// Files that passed the file checks, in load order.
        public var candidates: [String] = []
        /// Files and directories refused before any code ran.
        public var refused: [PluginLoadError] = []
        /// Directories that could not be read.
        public var unreadableDirectories: [String] = []
        /// Those of them that do not exist (a default folder may simply not
        /// be there), as given.
        public var missingDirectories: [String] = []
    }

    /// Suffixes the host treats as plug-ins: shared libraries, binding
    /// manifests (`NAME.xcallback.toml`, see ``BindingManifest``), and the
    /// formats installed (`NAME.wasm`, see ``PluginFormats``).
    public static var suffixes: [String] { [".so", BindingManifest.suffix] + PluginFormats.suffixes }

    public func scan() -> Scan {
        var scan = Scan()
        var seen = Set<FileSecurity.FileIdentity>()
        for directory in directories {
            if let problem = security.check(directory: directory) {
                var info = stat()
                if stat(directory, &info) != 0 && errno == ENOENT { scan.missingDirectories.append(directory) }
                scan.unreadableDirectories.append(problem)
                continue
            }
            guard let names = Self.entries(of: directory) else {
                scan.unreadableDirectories.append("\(directory): \(String(cString: strerror(errno)))")
                continue
            }
            let suffixes = Self.suffixes
            for name in names where suffixes.contains(where: name.hasSuffix) && !name.hasPrefix(".") {
                let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                switch security.check(file: path) {
                case .success(let identity):
                    if seen.insert(identity).inserted { scan.candidates.append(path) }
                case .failure(let error):
                    scan.refused.append(error)
                }
            }
        }
        return scan
    }

    private static func entries(of directory: String) -> [String]? {
        guard let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        // Bytewise order, independent of locale and of the file system.
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
