import CHostSupport
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One private, writable folder per sandboxed plug-in (its workers' current
/// folder and `TMPDIR`), under one folder the host makes at first need and
/// removes when it stops.
public final class ScratchFolders: Sendable {
    private struct State {
        var root: String?
        var folders: [String: String] = [:]
    }
    private let state = Lock(State())

    public init() {}

    /// The folder for the plug-in file at `pluginPath` (its worker makes it,
    /// mode 0700).
    public func folder(for pluginPath: String, named name: String) throws(PluginLoadError) -> String {
        try state.withLock { state -> Result<String, PluginLoadError> in
            if let folder = state.folders[pluginPath] { return .success(folder) }
            let root: String
            if let made = state.root {
                root = made
            } else {
                switch Self.makeRoot(for: pluginPath) {
                case .success(let made): root = made
                case .failure(let error): return .failure(error)
                }
            }
            state.root = root
            // The plug-in's file name, made unique: two folders may hold files
            // of the same name. Its worker makes it (`WorkerSandbox.enter`).
            let folder = "\(root)/\(name.isEmpty ? "plugin" : name)-\(state.folders.count + 1)"
            state.folders[pluginPath] = folder
            return .success(folder)
        }.get()
    }

    private static func makeRoot(for pluginPath: String) -> Result<String, PluginLoadError> {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array("\(base)/xcallback-scratch-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            return .failure(PluginLoadError(path: pluginPath, reason: .other("cannot make a scratch folder in \(base): \(String(cString: strerror(errno)))")))
        }
        // A root host's workers run as another user, who must pass through
        // to the folder of its own (and only that: 0711 lists nothing).
        if geteuid() == 0 { _ = chmod(template, 0o711) }
        return .success(String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Removes every folder and what plug-ins left in them.
    public func removeAll() {
        guard let root = state.withLock({ state -> String? in
            defer { state = State() }
            return state.root
        }) else { return }
        // Never following a symlink a plug-in planted.
        _ = xcallback_remove_tree(root)
    }
}
