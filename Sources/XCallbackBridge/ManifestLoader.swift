import CXCallback
import XCallbackRouting

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension PluginLoader {
    /// Largest manifest read: a manifest is a few lines; anything bigger is a mistake.
    public static let maxManifestBytes = 1 << 20

    /// Loads a binding manifest as a plug-in: parses it (every declaration
    /// included), opens its library with `dlopen(RTLD_NOW | RTLD_LOCAL)`,
    /// looks up each declared function with `dlsym` and prepares its libffi
    /// call interface, all now, at load time. Nothing in the library is
    /// called (beyond its constructors, which `dlopen` runs), and nothing
    /// but the declared functions is ever looked up.
    public func loadManifest(
        _ path: String,
        from file: PluginFile,
        conflictOwner: @escaping @Sendable (RoutePattern) -> String?
    ) throws(PluginLoadError) -> LoadedPlugin {
        func refuse(_ message: String) -> PluginLoadError {
            PluginLoadError(path: path, reason: .badManifest(message))
        }
        let text = try Self.readManifest(file)
        let manifest: BindingManifest
        do {
            manifest = try BindingManifest(parsing: text)
        } catch {
            throw refuse(error.description)
        }

        let libraryPath = Self.resolve(manifest.library, besides: path)
        // A library named by path passes the same checks as a plug-in, on
        // the descriptor it is then loaded from, before any of its code (its
        // constructors) runs. A bare name is the dynamic linker's to find,
        // in the system's library folders.
        // RTLD_NOW | RTLD_LOCAL for the reasons given in load(_:).
        let flags = RTLD_NOW | RTLD_LOCAL
        _ = dlerror()
        let opened: UnsafeMutableRawPointer?
        if libraryPath.contains("/") {
            let library: PluginFile
            do {
                library = try PluginFile.open(libraryPath, security: security)
            } catch {
                switch error.reason {
                case .cannotOpen(let why): throw refuse("cannot open library '\(manifest.library)': \(why)")
                default: throw refuse("library '\(manifest.library)' \(error.reasonText)")
                }
            }
            opened = library.load(flags: flags, keepsDescriptor: false).library
        } else {
            opened = dlopen(libraryPath, flags)
        }
        guard let library = opened else {
            throw refuse("cannot open library '\(manifest.library)': \(Self.dlerrorText())")
        }
        var bound: [(route: RoutePattern, function: BoundFunction)] = []
        for (index, entry) in manifest.functions.enumerated() {
            let symbol = entry.declaration.name
            _ = dlerror()
            guard let address = dlsym(library, symbol) else {
                throw refuse("function \(index + 1) (\(entry.declaration)): library '\(manifest.library)' has no symbol '\(symbol)'")
            }
            do {
                let function = try BoundFunction(declaration: entry.declaration, address: UnsafeRawPointer(address),
                                                 resultName: entry.result)
                bound.append((entry.route, function))
            } catch {
                throw refuse("function \(index + 1): \(error)")
            }
        }

        let info = PluginInfo(path: path, name: manifest.name, version: manifest.version, summary: manifest.summary,
                              abiMajor: Int(XCALLBACK_ABI_MAJOR), abiMinor: Int(XCALLBACK_ABI_MINOR))
        let handle = PluginHandle(name: info.name, logger: logger, conflictOwner: conflictOwner).retainForever()
        handle.beginRegistration()
        defer { handle.endRegistration() }
        for (route, function) in bound {
            let status = handle.register({ () throws(RoutePatternError) in route }, .bound(function))
            switch Int(status) {
            case XCALLBACK_OK:
                continue
            case XCALLBACK_ERR_ROUTE_CONFLICT:
                let owner = conflictOwner(route) ?? "another plug-in"
                throw refuse("route \(route): \(PluginLoader.refusal(of: route, owner: owner))")
            default:
                throw refuse("route \(route): registration failed with status \(status)")
            }
        }
        return LoadedPlugin(info: info, handle: handle, registrations: handle.registrations, shutdown: nil)
    }

    /// `library` as `dlopen` should see it: a bare name (no `/`) goes to the
    /// dynamic linker's search; a relative path is taken from the
    /// manifest's directory, not from the host's working directory.
    public static func resolve(_ library: String, besides manifest: String) -> String {
        guard library.contains("/"), !library.hasPrefix("/") else { return library }
        guard let slash = manifest.lastIndex(of: "/") else { return library }
        return String(manifest[...slash]) + library
    }

    private static func readManifest(_ file: PluginFile) throws(PluginLoadError) -> String {
        try file.readText(limit: maxManifestBytes) { .badManifest($0) }
    }

    private static func dlerrorText() -> String {
        dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
    }
}
