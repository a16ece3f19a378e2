import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The part of every worker's file view that no plug-in changes, built once
/// by the zygote (see view_template.c for how a worker builds its view from
/// it, and why: a hundred workers each building the whole view queued on
/// the kernel's mount lock).
///
/// Only a root host's zygote has one; elsewhere, and wherever building it
/// fails, each worker builds its whole view as before, and sees the same
/// files.
public enum FileViewTemplate {
    /// Builds the template of the default sandbox's view. Call once, while
    /// single-threaded (the zygote's warm-up). Returns why there is none,
    /// or nil.
    @discardableResult
    public static func prepare() -> String? {
        guard geteuid() == 0 else { return "the host is not root: each worker builds its whole view" }
        let plan = SandboxPlan(capabilities: .default, scratch: "/nonexistent", pluginPath: "/nonexistent/lib.so",
                               strict: false, fileView: true)
        let entries = commonEntries(of: FileView(plan: plan, loadedFrom: [], mappedFolders: WorkerSandbox.mappedFolders),
                                    pluginFolder: WorkerSandbox.folder(of: plan.pluginPath))
        var failure = [CChar](repeating: 0, count: 512)
        let made = FileView.withEntries(entries) { buffer in
            xcallback_view_template_make(buffer.baseAddress, Int32(buffer.count), &failure, UInt(failure.count))
        }
        guard made != 0 else { return nil }
        return String(decoding: failure.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What of a view is the same for every plug-in: all but its own folder
    /// and `/proc/self` (each worker's own process), and only folders and
    /// devices. A file such as `/etc/ld.so.cache` or `/etc/localtime` is
    /// replaced by a rename when it changes (ldconfig, a new time zone):
    /// bound once, the template would show every later worker the old one.
    static func commonEntries(of view: FileView, pluginFolder: String) -> [(path: String, kind: Int32)] {
        view.entries.filter { entry in
            var info = stat()
            guard entry.path != pluginFolder, entry.path != "/proc/self", stat(entry.path, &info) == 0 else { return false }
            let type = info.st_mode & S_IFMT
            return type == S_IFDIR || type == S_IFCHR
        }
    }

    /// The descriptors a fork that closes all others must keep.
    public static var descriptors: [Int32] {
        var held = [Int32](repeating: -1, count: 2)
        let count = held.withUnsafeMutableBufferPointer { xcallback_view_template_descriptors($0.baseAddress, 2) }
        return Array(held.prefix(Int(count)))
    }

    /// Forgets the template: a worker does, before any plug-in code runs.
    public static func release() {
        xcallback_view_template_release()
    }
}
