import CHostSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file a Unix socket was bound to (`--socket`, `--metrics unix:`),
/// held by a descriptor of its folder and by its identity: the host
/// restricts it and removes it at that, never at whatever the path names
/// later. A process that may write the folder (a worker, where the kernel
/// has no Landlock) could otherwise swap in a link, and have the host chmod
/// or delete the file it names.
public final class BoundSocketFile: Sendable {
    private let folder: Int32
    private let name: String
    private let device: UInt64
    private let inode: UInt64
    private let removed = Lock(false)

    /// Right after `bind`: nil when `path` does not name a socket now.
    public init?(path: String) {
        let (base, name) = Self.split(path)
        let folder = xcallback_hold_folder(base, 1)
        guard folder >= 0 else { return nil }
        var device: UInt64 = 0
        var inode: UInt64 = 0
        guard !name.isEmpty, xcallback_identify_at(folder, name, &device, &inode) == Int32(S_IFSOCK) else {
            close(folder)
            return nil
        }
        self.folder = folder
        self.name = name
        self.device = device
        self.inode = inode
    }

    deinit { close(folder) }

    /// The socket file a host that died left at `path` (no one answers on
    /// it), removed as the socket it is, never a file swapped in for it.
    public static func removeLeftover(at path: String) {
        BoundSocketFile(path: path)?.remove()
    }

    private static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        return (slash == path.startIndex ? "/" : String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    /// Sets the socket file's mode (whatever the umask made it); false if
    /// its name no longer names it.
    @discardableResult
    public func restrict(to mode: mode_t) -> Bool {
        xcallback_chmod_identified_at(folder, name, device, inode, UInt32(mode)) == 0
    }

    /// Removes the socket file, once, if its name still names it.
    public func remove() {
        let first = removed.withLock { removed -> Bool in
            defer { removed = true }
            return !removed
        }
        if first { _ = xcallback_unlink_identified_at(folder, name, device, inode) }
    }
}
