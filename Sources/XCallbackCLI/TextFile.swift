#if canImport(Glibc)
import Glibc
#endif

/// Whole-file reads and replace-by-rename writes, for small files.
enum TextFile {
    /// The file's bytes, or nil when it does not exist.
    static func read(_ path: String) throws(TextFileError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw TextFileError(path: path, action: "read")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw TextFileError(path: path, action: "read") }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Replaces the file in one step: write a temporary file beside it, then
    /// rename it over, so a reader sees the old file or the new one, never a
    /// half-written one. A symbolic link is followed (a managed dotfile stays
    /// a link); an existing file keeps its mode.
    static func replace(_ path: String, with bytes: [UInt8], mode newFileMode: mode_t = 0o644) throws(TextFileError) {
        let target = resolvedLink(path)
        var mode = newFileMode
        var existing = stat()
        if stat(target, &existing) == 0 { mode = existing.st_mode & 0o7777 }
        let directoryEnd = target.lastIndex(of: "/").map { target.index(after: $0) } ?? target.startIndex
        let temporary = String(target[..<directoryEnd]) + ".\(target[directoryEnd...]).\(getpid()).tmp"
        unlink(temporary)  // left by a crashed run that had our pid
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw TextFileError(path: temporary, action: "create") }
        fchmod(descriptor, mode)  // whatever the umask
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                let error = TextFileError(path: temporary, action: "write")
                close(descriptor)
                unlink(temporary)
                throw error
            }
            written += count
        }
        // Data on disk before the name points at it: a crash leaves the old file.
        guard fsync(descriptor) == 0, close(descriptor) == 0 else {
            let error = TextFileError(path: temporary, action: "write")
            unlink(temporary)
            throw error
        }
        guard rename(temporary, target) == 0 else {
            let error = TextFileError(path: target, action: "replace")
            unlink(temporary)
            throw error
        }
    }

    /// The file a path names after following symbolic links; the path itself
    /// when it does not exist yet.
    private static func resolvedLink(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Creates a directory and its missing parents.
    /// Makes `path` hold `bytes` (and the folders above it exist), leaving
    /// a file that already holds them untouched: a copy this binary carries
    /// (the header, the kits) written out, or brought up to date.
    static func ensure(_ path: String, holds bytes: [UInt8]) throws(TextFileError) {
        if try read(path) == bytes { return }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex { try makeDirectories(String(path[..<slash])) }
        try replace(path, with: bytes)
    }

    static func makeDirectories(_ path: String, mode: mode_t = 0o755) throws(TextFileError) {
        var prefix = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0 && errno != EEXIST { throw TextFileError(path: prefix, action: "create directory") }
        }
    }
}

/// A file operation that failed, with the system's reason.
struct TextFileError: Error, CustomStringConvertible {
    let path: String
    let action: String
    let reason: String

    init(path: String, action: String) {
        self.path = path
        self.action = action
        reason = String(cString: strerror(errno))
    }

    var description: String { "cannot \(action) \(path): \(reason)" }
}
