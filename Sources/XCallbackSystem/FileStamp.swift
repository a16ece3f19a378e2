#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What identifies one version of a plug-in file: a rename installs a new
/// inode, an in-place write changes size or mtime. A file whose stamp is
/// unchanged is not looked at again, so a broken file is reported once and
/// retried only when it changes (as GStreamer's registry does).
public struct FileStamp: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modified: Int64
    public var modifiedNanoseconds: Int

    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = info.st_mtim.tv_nsec
    }
}
