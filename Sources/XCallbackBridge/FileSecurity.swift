#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file checks a plug-in file and its directory must pass before the
/// host runs any of its code: code that others can write is code others run.
public struct FileSecurity: Sendable {
    /// Skip the ownership and permission checks (`--allow-insecure-plugins`).
    public var allowInsecure: Bool

    public init(allowInsecure: Bool = false) {
        self.allowInsecure = allowInsecure
    }

    /// Identity of a file, for de-duplicating one file reached twice.
    public struct FileIdentity: Hashable, Sendable {
        public var device: UInt64
        public var inode: UInt64
    }

    /// Checks `path` (following no symlink for the verdict on the file
    /// itself: a symlink is judged by its target, which must pass too).
    public func check(file path: String) -> Result<FileIdentity, PluginLoadError> {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return .failure(PluginLoadError(path: path, reason: .cannotOpen(String(cString: strerror(errno)))))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(PluginLoadError(path: path, reason: .notRegularFile))
        }
        if let problem = problem(with: info, kind: "file") {
            return .failure(PluginLoadError(path: path, reason: .insecure(problem)))
        }
        return .success(FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
    }

    /// Checks an open plug-in file through its descriptor: the file itself,
    /// and every folder on its real path (symlinks resolved), since whoever
    /// can write to one of them can swap the file. Folders writable by
    /// others pass only with the sticky bit (`/tmp`), where no one else can
    /// replace what is ours. As sudo and PostgreSQL check what they load.
    public func check(descriptor: Int32, path: String) -> PluginLoadError? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            return PluginLoadError(path: path, reason: .cannotOpen(String(cString: strerror(errno))))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return PluginLoadError(path: path, reason: .notRegularFile) }
        if let problem = problem(with: info, kind: "file") {
            return PluginLoadError(path: path, reason: .insecure(problem))
        }
        guard !allowInsecure, let real = Self.realPath(of: descriptor) else { return nil }
        var folder = real
        while let slash = folder.lastIndex(of: "/") {
            folder = slash == folder.startIndex ? "/" : String(folder[..<slash])
            var folderInfo = stat()
            guard stat(folder, &folderInfo) == 0 else {
                return PluginLoadError(path: path, reason: .cannotOpen("\(folder): \(String(cString: strerror(errno)))"))
            }
            let sticky = folderInfo.st_mode & S_ISVTX != 0
            if !sticky, let problem = problem(with: folderInfo, kind: "folder \(folder) on the way to it (\(real))") {
                return PluginLoadError(path: path, reason: .insecure(problem))
            }
            if sticky, folderInfo.st_uid != 0, folderInfo.st_uid != geteuid() {
                return PluginLoadError(path: path, reason: .insecure(
                    "folder \(folder) on the way to it (\(real)) is owned by another user (uid \(folderInfo.st_uid))"))
            }
            if folder == "/" { break }
        }
        return nil
    }

    /// The path the kernel has for an open file, symlinks resolved.
    public static func realPath(of descriptor: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasPrefix("/") ? path : nil
    }

    /// Checks a plug-in directory; nil when it is fine.
    public func check(directory path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "\(path): not a directory" }
        return problem(with: info, kind: "directory").map { "\(path): refused: \($0)" }
    }

    private func problem(with info: stat, kind: String) -> String? {
        if allowInsecure { return nil }
        let mode = info.st_mode
        if mode & S_IWOTH != 0 {
            return "\(kind) is writable by others (mode \(octal(mode))); run chmod o-w, or pass --allow-insecure-plugins"
        }
        if mode & S_IWGRP != 0 {
            return "\(kind) is writable by its group (mode \(octal(mode))); run chmod g-w, or pass --allow-insecure-plugins"
        }
        let owner = info.st_uid
        if owner != 0 && owner != geteuid() {
            return "\(kind) is owned by another user (uid \(owner)); only root or uid \(geteuid()) may own plug-ins"
        }
        return nil
    }

    private func octal(_ mode: mode_t) -> String {
        "0" + String(mode & 0o7777, radix: 8)
    }
}
