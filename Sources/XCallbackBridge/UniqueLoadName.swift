import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Names under which `dlopen` can load an open file without keeping the
/// descriptor open for the rest of the process.
///
/// glibc returns an already loaded library when the name matches, so a
/// load name must never be used twice in one process. `/proc/self/fd/N`
/// is unique only while N stays open: the host used to keep one descriptor
/// per load, and a host reloading plug-ins in process leaked one per
/// reload. Instead, the file is loaded through a symlink to
/// `/proc/self/fd/N` named with a counter in a private folder made for the
/// load; the folder and the link are gone once `dlopen` returns, and the
/// descriptor can be closed.
///
/// The counter is process-wide state because the dynamic linker's table of
/// loaded names is.
public enum UniqueLoadName {
    private static let loads = Atomic<UInt64>(0)

    /// Runs `body` with a name for `descriptor` no earlier load used; nil
    /// when no private folder can be made (then the caller keeps the
    /// descriptor and loads it as `/proc/self/fd/N`).
    public static func withName<R>(for descriptor: Int32, _ body: (String) -> R) -> R? {
        let base = Environment.temporaryDirectory
        var template = Array("\(base)/xcallback-load-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        let folder = String(cString: made)
        defer { rmdir(folder) }
        let number = loads.wrappingAdd(1, ordering: .relaxed).newValue
        let link = "\(folder)/\(number).so"
        guard symlink("/proc/self/fd/\(descriptor)", link) == 0 else { return nil }
        defer { unlink(link) }
        return body(link)
    }

    private enum Environment {
        static var temporaryDirectory: String {
            if let value = getenv("TMPDIR"), value.pointee != 0 { return String(cString: value) }
            return "/tmp"
        }
    }
}
