import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The files a worker can see: built, not filtered (bubblewrap's way).
///
/// Its root is an empty, read-only tmpfs; what loading and running a
/// plug-in needs is bound in read-only at its own path (the system's
/// library folders, the folders of everything the worker has mapped, which
/// hold the Swift runtime and its ICU data, the plug-in's folder, time-zone
/// data, a few devices and `/proc/self`), each granted path as granted, and
/// the scratch folder is a tmpfs of `scratch` MiB. Anything else does not
/// exist for the plug-in: `stat`, `inotify_add_watch` or `chmod` of it fail
/// with ENOENT. Landlock, where the kernel has it, is a second wall over the
/// same paths.
struct FileView {
    let entries: [(path: String, kind: Int32)]
    let plan: SandboxPlan

    static let read = Int32(XCALLBACK_VIEW_READ)
    static let write = Int32(XCALLBACK_VIEW_WRITE)
    static let device = Int32(XCALLBACK_VIEW_DEVICE)
    static let follow = Int32(XCALLBACK_VIEW_FOLLOW)
    static let granted = Int32(XCALLBACK_VIEW_GRANTED)

    /// Files a program that resolves names needs (with `network`), bound as
    /// the files they name: /etc/resolv.conf is often a link into /run.
    static let networkFiles = [
        "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
        "/etc/services", "/etc/protocols", "/etc/ssl", "/usr/share/ca-certificates",
    ]

    init(plan: SandboxPlan, loadedFrom: [String], mappedFolders: [String]) {
        let capabilities = plan.capabilities
        var entries: [(String, Int32)] = []
        for path in WorkerSandbox.systemReadable {
            switch path {
            case "/proc/self": entries.append((path, Self.read | Self.follow))
            case "/etc/localtime": entries.append((path, Self.read | Self.follow))
            default: entries.append((path, Self.read))
            }
        }
        entries += mappedFolders.map { ($0, Self.read) }
        entries += ([plan.pluginPath] + loadedFrom).map { (WorkerSandbox.folder(of: $0), Self.read) }
        entries += WorkerSandbox.devices.map { ($0, Self.device) }
        if capabilities.exec {
            entries += (WorkerSandbox.programFolders + ["/etc/alternatives"]).map { ($0, Self.read) }
        }
        if capabilities.network { entries += Self.networkFiles.map { ($0, Self.read | Self.follow) } }
        if capabilities.ipc { entries.append(("/dev/shm", Self.write)) }
        entries += capabilities.filesRead.map { ($0, Self.read | Self.granted) }
        entries += capabilities.filesWrite.map { ($0, Self.write | Self.granted) }
        // One entry a path, the widest right winning: a folder read for the
        // plug-in and granted for writing is written.
        var widest: [String: Int32] = [:]
        for (path, kind) in entries where path.hasPrefix("/") {
            let normalized = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
            // The wider right wins; a granted path keeps its refusal of symlinks.
            let previous = widest[normalized] ?? kind
            widest[normalized] = max(previous & 0xF, kind & 0xF) | ((previous | kind) & ~0xF)
        }
        // A folder bound read-only brings what is beneath it (binds are
        // recursive): a second bind of the same rights would only cost a
        // mount operation (the mapped folders sit inside /usr/lib).
        func covered(_ path: String, _ kind: Int32) -> Bool {
            var parent = path
            while let slash = parent.lastIndex(of: "/"), slash != parent.startIndex {
                parent = String(parent[..<slash])
                // A symlink is made again as a symlink, not bound: what it
                // names may not be in the view.
                var info = stat()
                if let outer = widest[parent], outer & Self.follow == 0, outer & 0xF >= kind & 0xF,
                   kind & (Self.follow | Self.granted) == 0,
                   lstat(parent, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                    return true
                }
            }
            return false
        }
        self.entries = widest.filter { !covered($0.key, $0.value) }.map { (path: $0.key, kind: $0.value) }
        self.plan = plan
    }

    /// Swaps `descriptor` (the plug-in file the host opened, on the host's
    /// own, writable mount) for the same file opened through the view's
    /// read-only bind of its folder: through the host's, a constructor
    /// could `fchmod`, `futimens` or `fsetxattr` the file itself. The same
    /// file, or the plug-in is refused: the host checked that one.
    static func reopen(_ descriptor: Int32, at path: String) throws(SandboxError) {
        let viewed = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard viewed >= 0 else {
            throw SandboxError("cannot open the plug-in file \(path) in the worker's file view: \(String(cString: strerror(errno)))")
        }
        defer { close(viewed) }
        var checked = stat(), seen = stat()
        guard fstat(descriptor, &checked) == 0, fstat(viewed, &seen) == 0,
              checked.st_dev == seen.st_dev, checked.st_ino == seen.st_ino else {
            throw SandboxError("the plug-in file \(path) changed while its worker started; not loaded")
        }
        guard dup2(viewed, descriptor) == descriptor else {
            throw SandboxError("dup2: \(String(cString: strerror(errno)))")
        }
    }

    /// Whether `build` makes it from the zygote's template
    /// (`FileViewTemplate`), which needs no mount namespace entered first.
    var fromTemplate: Bool {
        withEntries { xcallback_view_template_usable($0.baseAddress, Int32($0.count)) != 0 }
    }

    private func withEntries<Result>(_ body: (UnsafeMutableBufferPointer<xcallback_view_entry>) -> Result) -> Result {
        Self.withEntries(entries, body)
    }

    /// `entries` as the C calls take them, for the length of `body`.
    static func withEntries<Result>(_ entries: [(path: String, kind: Int32)],
                                    _ body: (UnsafeMutableBufferPointer<xcallback_view_entry>) -> Result) -> Result {
        let copies = entries.map { (strdup($0.path), $0.kind) }
        defer { copies.forEach { free($0.0) } }
        var cEntries = copies.map { xcallback_view_entry(path: UnsafePointer($0.0), kind: $0.1) }
        return cEntries.withUnsafeMutableBufferPointer { body($0) }
    }

    /// Builds the view and enters it. The caller is in a mount namespace of
    /// its own, still single-threaded, with no plug-in code run yet.
    func build() throws(SandboxError) {
        let owner = plan.identity.map { ($0.uid, $0.gid) } ?? (getuid(), getgid())
        var failure = [CChar](repeating: 0, count: 512)
        let result = withEntries { buffer in
            xcallback_build_view(buffer.baseAddress, Int32(buffer.count), plan.scratch,
                                 UInt64(plan.capabilities.scratchMiB) << 20, plan.capabilities.exec ? 1 : 0,
                                 owner.0, owner.1, &failure, UInt(failure.count))
        }
        guard result == 0 else {
            let step = String(decoding: failure.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw SandboxError("cannot build the worker's file view (\(step.isEmpty ? String(cString: strerror(errno)) : step))")
        }
    }
}
