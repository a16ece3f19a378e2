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
///
/// A plug-in can change what is in its folder at any moment, so the host
/// removes it only once no process that could write there is left, and
/// then descriptor-relative: a link is never followed, a mount never
/// crossed (`xcallback_remove_tree_at`). Every worker (and probe) is
/// counted as a `ScratchWriter` from before it starts until the host has
/// seen it end; the count is the guarantee, not the order of a stop.
public final class ScratchFolders: Sendable {
    private struct State {
        /// The root's path, and a descriptor of the folder made there.
        var root: (path: String, held: Int32)?
        var folders: [String: String] = [:]
        var writers: [ObjectIdentifier: ScratchWriter] = [:]
        /// Removed (or left for good): no new folder, no new writer.
        var closed = false
    }
    private let state = ConditionLock(State())

    public init() {}

    deinit {
        if let held = state.withLock({ $0.root?.held }) { close(held) }
    }

    /// The folder for the plug-in file at `pluginPath` (its worker makes it,
    /// mode 0700).
    public func folder(for pluginPath: String, named name: String) throws(PluginLoadError) -> String {
        try state.withLock { state -> Result<String, PluginLoadError> in
            if let folder = state.folders[pluginPath] { return .success(folder) }
            guard !state.closed else { return .failure(Self.closedError(pluginPath)) }
            let root: String
            if let made = state.root {
                root = made.path
            } else {
                switch Self.makeRoot(for: pluginPath) {
                case .success(let made):
                    state.root = made
                    root = made.path
                case .failure(let error): return .failure(error)
                }
            }
            // The plug-in's file name, made unique: two folders may hold files
            // of the same name. Its worker makes it (`WorkerSandbox.enter`).
            let folder = "\(root)/\(name.isEmpty ? "plugin" : name)-\(state.folders.count + 1)"
            state.folders[pluginPath] = folder
            return .success(folder)
        }.get()
    }

    private static func closedError(_ pluginPath: String) -> PluginLoadError {
        PluginLoadError(path: pluginPath, reason: .other("the host is stopping: its scratch folders are removed, so no worker starts"))
    }

    private static func makeRoot(for pluginPath: String) -> Result<(path: String, held: Int32), PluginLoadError> {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array("\(base)/xcallback-scratch-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            return .failure(PluginLoadError(path: pluginPath, reason: .other("cannot make a scratch folder in \(base): \(String(cString: strerror(errno)))")))
        }
        // A root host's workers run as another user, who must pass through
        // to the folder of its own (and only that: 0711 lists nothing).
        if geteuid() == 0 { _ = chmod(template, 0o711) }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // The folder just made, held: whatever takes its name later is not
        // what the host removes.
        let held = xcallback_hold_folder(path, 0)
        guard held >= 0 else {
            let reason = String(cString: strerror(errno))
            rmdir(path)
            return .failure(PluginLoadError(path: pluginPath, reason: .other("cannot open the scratch folder \(path): \(reason)")))
        }
        return .success((path, held))
    }

    /// Counts a process about to start that may write in a folder, until
    /// it calls `ended()`; nil once the folders are removed (the host is
    /// stopping), when nothing may start.
    public func admitWriter() -> ScratchWriter? {
        state.withLock { state -> ScratchWriter? in
            guard !state.closed else { return nil }
            let writer = ScratchWriter(folders: self)
            state.writers[ObjectIdentifier(writer)] = writer
            return writer
        }
    }

    func writerEnded(_ writer: ScratchWriter) {
        state.withLock { _ = $0.writers.removeValue(forKey: ObjectIdentifier(writer)) }
        state.broadcast()
    }

    /// How many processes that may write in the folders are not known to
    /// have ended.
    public var liveWriters: Int { state.withLock { $0.writers.count } }

    /// What `removeAll` did.
    public enum Removal: Sendable, Equatable {
        /// No folder was ever made.
        case nothing
        case removed(path: String)
        /// Something of the tree could not be removed (a mount point
        /// inside, a tree too deep, a file the host may not remove).
        case incomplete(path: String, reason: String)
        /// Left whole: `writers` processes that could write there were not
        /// seen to end.
        case left(path: String, writers: Int)

        /// A line for the log when something was left; nil when all went.
        public var warning: String? {
            switch self {
            case .nothing, .removed: return nil
            case .incomplete(let path, let reason):
                return "could not remove all of the scratch folder \(PrintableText.escaping(path)): \(reason)"
            case .left(let path, let writers):
                return "left the scratch folder \(PrintableText.escaping(path)) in place: \(writers) worker(s) that could write there were not seen to end (removing it under a live worker could delete what a link it swaps in names); remove it once they are gone"
            }
        }
    }

    /// How long `removeAll` waits for writers it killed to be seen to end.
    public static let endGrace: UInt64 = 500_000_000

    /// Removes every folder and what plug-ins left in them, once every
    /// writer has ended: up to `deadline` it waits for them to end by
    /// themselves, then kills those left and waits `endGrace` more. One
    /// still not seen to end leaves the folders in place (removing under a
    /// live writer is what a plug-in racing the removal wants). After this,
    /// no folder is made and no writer admitted.
    @discardableResult
    public func removeAll(waitingUntil deadline: UInt64 = MonotonicClock.now + 2_000_000_000) -> Removal {
        var root = takeRootOnceUnwritten(deadline: deadline)
        if case .waiting(let stragglers) = root {
            for writer in stragglers { writer.end() }
            root = takeRootOnceUnwritten(deadline: max(deadline, MonotonicClock.now) + Self.endGrace)
        }
        switch root {
        case .none: return .nothing
        case .waiting(let stragglers):
            return .left(path: state.withLock { $0.root?.path } ?? "", writers: stragglers.count)
        case .ready(let path, let held):
            defer { close(held) }
            return Self.remove(path, held: held)
        }
    }

    private enum Taken {
        case none
        case waiting([ScratchWriter])
        case ready(path: String, held: Int32)
    }

    /// Waits until no writer is left (or `deadline`), then closes the
    /// folders (past the deadline of a stop, nothing new starts either) and
    /// hands over the root once no writer is left.
    private func takeRootOnceUnwritten(deadline: UInt64) -> Taken {
        state.wait(until: { $0.writers.isEmpty }, deadline: deadline) { state -> Taken in
            state.closed = true
            guard state.writers.isEmpty else { return .waiting(Array(state.writers.values)) }
            state.folders = [:]
            guard let root = state.root else { return .none }
            state.root = nil
            return .ready(path: root.path, held: root.held)
        }
    }

    private static func remove(_ path: String, held: Int32) -> Removal {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return .incomplete(path: path, reason: "not an absolute path")
        }
        let base = slash == path.startIndex ? "/" : String(path[..<slash])
        let name = String(path[path.index(after: slash)...])
        let parent = xcallback_hold_folder(base, 1)
        guard parent >= 0 else { return .incomplete(path: path, reason: "cannot open \(base): \(String(cString: strerror(errno)))") }
        defer { close(parent) }
        guard xcallback_remove_tree_at(parent, name, held) == 0 else {
            let reason: String
            switch errno {
            case EXDEV: reason = "a mount point inside was left alone"
            case ENAMETOOLONG: reason = "folders nested deeper than the host walks were left"
            case ESTALE: reason = "its name no longer names the folder the host made; emptied, not removed"
            default: reason = String(cString: strerror(errno))
            }
            return .incomplete(path: path, reason: reason)
        }
        return .removed(path: path)
    }
}
