import XCallbackSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A plug-in file (a library, or a binding manifest's library) opened once
/// and checked through that open descriptor, so what is loaded is exactly
/// what was checked, whoever swaps the path afterwards. The host opens and
/// checks it again for every worker it starts, restarts included.
public struct PluginFile {
    /// The path as the user named it, for messages.
    public let path: String
    public let descriptor: Int32

    /// Opens `path` and checks the open file and the folders on its real
    /// path. A name without a slash is a file in the current folder
    /// (`xcallback check hello.so`); errors name `path` as given.
    public static func open(_ path: String, security: FileSecurity) throws(PluginLoadError) -> PluginFile {
        if let early = openedBeforeSandbox.withLock({ $0.removeValue(forKey: path) }) {
            return PluginFile(path: path, descriptor: try early.get())
        }
        // O_NONBLOCK: a FIFO named like a plug-in must be refused by the
        // check below, not hang the open waiting for a writer.
        let descriptor = Glibc.open(path.contains("/") ? path : "./" + path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw PluginLoadError(path: path, reason: .cannotOpen(String(cString: strerror(errno))))
        }
        if let error = security.check(descriptor: descriptor, path: path) {
            Glibc.close(descriptor)
            throw error
        }
        return PluginFile(path: path, descriptor: descriptor)
    }

    /// Files a worker opened and checked before entering its sandbox, by
    /// path, with the verdict: `open` takes them from here.
    private static let openedBeforeSandbox = Lock<[String: Result<Int32, PluginLoadError>]>([:])

    /// Opens and checks `path` now, for `open` to take later: a worker does
    /// it before its sandbox, whose user namespace (for a host that is not
    /// root) shows files of ids it does not map, root's among them, as owned
    /// by the overflow id, so ownership can no longer be judged there.
    public static func openBeforeSandbox(_ path: String, security: FileSecurity) {
        let verdict = Result { () throws(PluginLoadError) -> Int32 in try open(path, security: security).descriptor }
        openedBeforeSandbox.withLock { $0[path] = verdict }
    }

    /// A descriptor a parent already opened and checked (a worker's, a probe's).
    public static func inherited(_ descriptor: Int32, path: String) -> PluginFile {
        PluginFile(path: path, descriptor: descriptor)
    }

    /// The name `dlopen` loads it by while the descriptor stays open.
    /// glibc returns an already loaded library when the name matches, so a
    /// descriptor loaded by this name stays open for the life of the
    /// process: the name must never be reused.
    public var loadName: String { "/proc/self/fd/\(descriptor)" }

    /// Loads the file with `dlopen`. A process that loads files again and
    /// again (a host reloading plug-ins in process) gives up the descriptor:
    /// the file is loaded under a name never used before (`UniqueLoadName`)
    /// and closed. Where no such name can be made, and in a process that
    /// loads once (`keepsDescriptor`), it is loaded as `loadName` and stays
    /// open. Returns the handle (nil: see `dlerror`) and the name used.
    public func load(flags: Int32, keepsDescriptor: Bool) -> (library: UnsafeMutableRawPointer?, name: String) {
        if !keepsDescriptor, let loaded = UniqueLoadName.withName(for: descriptor, { name in
            (library: dlopen(name, flags), name: name)
        }) {
            close()
            return loaded
        }
        return (dlopen(loadName, flags), loadName)
    }

    public func close() { Glibc.close(descriptor) }

    /// The whole file as UTF-8 text (a manifest, a capability file). One
    /// longer than `limit` bytes or not UTF-8 is refused for the reason
    /// `refuse` makes of the problem.
    public func readText(limit: Int, refuse: (String) -> PluginLoadError.Reason) throws(PluginLoadError) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = pread(descriptor, &chunk, chunk.count, off_t(bytes.count))
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                throw PluginLoadError(path: path, reason: .cannotOpen(String(cString: strerror(errno))))
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > limit { throw PluginLoadError(path: path, reason: refuse("larger than \(limit) bytes")) }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw PluginLoadError(path: path, reason: refuse("not valid UTF-8"))
        }
        return text
    }
}
