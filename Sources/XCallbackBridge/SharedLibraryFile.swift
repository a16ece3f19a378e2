#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Prepares a plug-in file for `dlopen`.
///
/// - A half-copied library can make `dlopen` die of SIGBUS when it maps
///   pages past the end of the file: the ELF program and section headers
///   are checked against the file size first, and such a file is an error.
/// - glibc returns an already loaded library when the *name* matches, so a
///   replaced file at the same path would never load again; and the file
///   checked should be the file loaded. So the file is opened once, and
///   loaded as `/proc/self/fd/N`, a name no other load shares; the
///   descriptor stays open for the life of the process (a library is never
///   unloaded, and the name must never be reused).
public enum SharedLibraryFile {
    public struct Failure: Error {
        public var message: String
    }

    /// Why `file` must not be given to `dlopen`, or nil when it may.
    public static func problem(loading file: PluginFile) -> String? {
        var info = stat()
        guard fstat(file.descriptor, &info) == 0 else { return String(cString: strerror(errno)) }
        return truncation(file.descriptor, size: Int(info.st_size))
    }

    /// Why a 64-bit ELF file is cut short, or nil when its headers and
    /// loadable segments all fit (non-ELF files are left to `dlopen`).
    public static func truncation(_ descriptor: Int32, size: Int) -> String? {
        func read(_ count: Int, at offset: Int) -> [UInt8]? {
            guard offset >= 0, count >= 0, offset + count <= size else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            return pread(descriptor, &bytes, count, off_t(offset)) == count ? bytes : nil
        }
        func integer(_ bytes: [UInt8], _ offset: Int, _ width: Int) -> Int {
            var value = 0
            for index in 0..<width { value |= Int(bytes[offset + index]) << (8 * index) }
            return value
        }
        guard let header = read(64, at: 0), header[0] == 0x7F, header[1] == 0x45, header[2] == 0x4C, header[3] == 0x46,
              header[4] == 2, header[5] == 1 else {
            return size < 64 ? "the file is \(size) bytes, too short for a shared library" : nil
        }
        let programOffset = integer(header, 0x20, 8)
        let sectionOffset = integer(header, 0x28, 8)
        let programEntrySize = integer(header, 0x36, 2)
        let programCount = integer(header, 0x38, 2)
        let sectionEntrySize = integer(header, 0x3A, 2)
        let sectionCount = integer(header, 0x3C, 2)
        let cut = "the file is truncated (\(size) bytes): was it still being copied? Install plug-ins by copying to a temporary name and renaming"
        guard programEntrySize >= 56, let programs = read(programEntrySize * programCount, at: programOffset) else { return cut }
        if sectionOffset != 0 && sectionOffset + sectionEntrySize * sectionCount > size { return cut }
        for index in 0..<programCount {
            let entry = index * programEntrySize
            let isLoadable = integer(programs, entry, 4) == 1
            let fileOffset = integer(programs, entry + 8, 8)
            let fileSize = integer(programs, entry + 32, 8)
            if isLoadable && fileOffset + fileSize > size { return cut }
        }
        return nil
    }
}
