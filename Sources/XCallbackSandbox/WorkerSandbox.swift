import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The sandbox could not be built; the worker refuses to load the plug-in.
public struct SandboxError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Where a worker reports dying at its memory ceiling: a word in the
/// memory page it shares with the host, which reads it after the worker died.
public struct SandboxReport: @unchecked Sendable {
    // @unchecked: written by a signal handler through an atomic store, read by the host.
    public let memory: UnsafeMutablePointer<UInt64>

    public init(memory: UnsafeMutablePointer<UInt64>) {
        self.memory = memory
    }
}

/// The sandbox a worker enters before any of the plug-in's code runs.
///
/// It is entered before `dlopen`, not after: `dlopen` runs the library's
/// constructors, so a plug-in that did its harm there would be loose before
/// any rule applied. The load paths are allowed instead (system library
/// folders, the folders of everything already mapped, the plug-in's folder).
public enum WorkerSandbox {
    /// The folders every worker may read: the system's libraries and the
    /// few files the C and Swift runtimes read while running.
    static let systemReadable = [
        "/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/local/lib",
        "/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo", "/usr/share/locale",
        "/sys/devices/system/cpu", "/proc/self",
    ]
    /// Devices a worker may read and write.
    static let devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]
    /// Where programs live, readable and executable with `exec`.
    static let programFolders = ["/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/libexec"]

    /// Applies `plan` to this process and every thread and process it
    /// starts; `loadedFrom` names more files whose folders may be read (the
    /// file the plug-in really is, past symlinks); `supervisor` is the socket to hand the
    /// seccomp listener to the host on (-1: none, the kernel answers alone).
    /// Returns the layers applied, for the log.
    /// `library`, when given, is the plug-in file the host opened and
    /// checked (its descriptor, and the path it really has); in a file view
    /// it is swapped for the same file opened through the view's read-only
    /// bind (see `FileView`).
    public static func enter(_ plan: SandboxPlan, report: SandboxReport?, host: pid_t = getppid(), loadedFrom: [String] = [],
                             supervisor: Int32 = -1, library: (descriptor: Int32, path: String)? = nil) throws(SandboxError) -> [String] {
        let support = KernelSupport.probe()
        if plan.strict, let missing = support.missing {
            throw SandboxError("--sandbox strict: this kernel lacks \(missing)")
        }
        // Landlock confines the calling thread and the threads it starts
        // later, not threads already running.
        let threads = threadCount()
        if threads > 1 && (support.landlockABI != nil || plan.fileView) {
            throw SandboxError("the worker already runs \(threads) threads; the sandbox must be entered first")
        }
        let capabilities = plan.capabilities
        var layers: [String] = []

        // The host named it and made the folder it is in; the worker makes
        // it, before Landlock could refuse to (many workers start at once:
        // their folders are made side by side, not one by one in the host).
        // With a file view, a tmpfs of its own is mounted on it there and
        // the plug-in never sees this folder.
        guard mkdir(plan.scratch, 0o700) == 0 || errno == EEXIST else {
            throw SandboxError("cannot make the scratch folder \(plan.scratch): \(String(cString: strerror(errno)))")
        }
        if let identity = plan.identity, !plan.fileView {
            // The worker writes there under its own identity.
            guard chown(plan.scratch, identity.uid, identity.gid) == 0 else {
                throw SandboxError("cannot give the scratch folder \(plan.scratch) to uid \(identity.uid): \(String(cString: strerror(errno)))")
            }
        }
        setenv("TMPDIR", plan.scratch, 1)

        if capabilities.processes > 0 {
            guard xcallback_start_group_guardian() == 0 else {
                throw SandboxError("cannot start the process-group guardian: \(String(cString: strerror(errno)))")
            }
            layers.append("group guardian")
        }
        let memory = UInt64(capabilities.memoryMiB) << 20
        // A sanitizer's runtime has reserved terabytes for its shadow and
        // maps its own memory all along (`.ci/sanitize`): there, the memory
        // ceilings would starve it, so they are left off.
        if !Self.runsUnderSanitizer {
            try limit(Int32(RLIMIT_DATA.rawValue), memory, "memory")
            // Shared mappings (MAP_SHARED, memfd) are not data: bound them with
            // the address space, leaving room for what is reserved but not used
            // (malloc's per-thread arenas reserve 64 MiB each).
            try limit(Int32(RLIMIT_AS.rawValue), 2 * memory + (1 << 30), "address space")
        }
        try limit(Int32(RLIMIT_CORE.rawValue), 0, "core dumps")
        layers.append("rlimits")

        // Linux counts RLIMIT_NPROC per user, threads included: the ceiling
        // is what the worker's user runs now plus the grant. Counted before
        // the view hides every other process's /proc entry. A root host's
        // workers all share one user, whose count every other worker's
        // threads move: a ceiling there would fail this worker's own
        // threads at random, so, as when its workers ran as root, none is
        // set (the grant still decides whether any process may start).
        let processCeiling = capabilities.processes > 0 && plan.identity == nil && getuid() != 0
            ? tasksOfUser(getuid()) + capabilities.processes : nil
        if plan.fileView {
            let view = FileView(plan: plan, loadedFrom: loadedFrom, mappedFolders: mappedFolders)
            // Built from the zygote's template, the view brings its own mount
            // namespace: a copy of the host's made here would only be thrown
            // away (and its teardown waits on the kernel).
            layers += try enterNamespaces(Namespaces.wanted(by: capabilities), fileView: !view.fromTemplate)
            try view.build()
            if let library { try FileView.reopen(library.descriptor, at: library.path) }
            layers.append("file view")
        } else {
            layers += try enterNamespaces(Namespaces.wanted(by: capabilities), fileView: false)
        }
        // Landlock's rules open each path now, while the worker may still
        // pass through folders its new identity could not (a root host's
        // private folders holding the plug-in); they bind the files found.
        var ruleset: Int32 = -1
        if let abi = support.landlockABI {
            ruleset = try landlockRuleset(plan, abi: abi, loadedFrom: loadedFrom)
        }
        if let identity = plan.identity {
            guard xcallback_become(identity.uid, identity.gid) == 0 else {
                if ruleset >= 0 { close(ruleset) }
                throw SandboxError("cannot become uid \(identity.uid), gid \(identity.gid): \(String(cString: strerror(errno)))")
            }
            layers.append("uid \(identity.uid)")
        }
        if let processCeiling {
            try limit(Int32(__RLIMIT_NPROC.rawValue), UInt64(processCeiling), "processes")
        }
        // After the view: building it holds a descriptor for each of its
        // twenty-odd sources at once, more than a small grant allows.
        try limit(Int32(RLIMIT_NOFILE.rawValue), UInt64(capabilities.openFiles), "open_files")

        if let report {
            guard xcallback_sandbox_report_to(report.memory, memory) == 0 else {
                throw SandboxError("cannot install the violation handlers: \(String(cString: strerror(errno)))")
            }
        }
        guard xcallback_no_new_privileges() == 0 else {
            throw SandboxError("prctl(PR_SET_NO_NEW_PRIVS): \(String(cString: strerror(errno)))")
        }
        _ = xcallback_make_nondumpable()
        layers.append("no-new-privs")

        guard xcallback_drop_capabilities() == 0 else {
            throw SandboxError("cannot drop capabilities: \(String(cString: strerror(errno)))")
        }
        layers.append("no capabilities")
        if ruleset >= 0 {
            guard xcallback_landlock_enforce(ruleset) == 0 else {
                throw SandboxError("landlock_restrict_self: \(String(cString: strerror(errno)))")
            }
            layers.append("landlock \(support.landlockABI ?? 0)")
        }
        if support.seccomp {
            var grant = SystemCallPolicy.grant(for: capabilities, fileView: plan.fileView)
            grant.own_pid = getpid()
            grant.host_pid = host
            // The argument rules first: their filter holds the listener the
            // host answers on, and a process may have only one.
            let result = xcallback_seccomp_load(&grant, supervisor)
            guard result == 0 else { throw SandboxError("cannot load the seccomp filter: \(String(cString: strerror(-result)))") }
            let allowList = xcallback_allow_list_load(&grant)
            guard allowList == 0 else {
                throw SandboxError("cannot load the seccomp allow-list: \(String(cString: strerror(-allowList)))")
            }
            layers.append(supervisor >= 0 ? "seccomp allow-list (supervised)" : "seccomp allow-list")
        }
        return layers
    }

    /// Enters an IPC and an empty network namespace of its own, as `wanted`
    /// (defence in depth, as bubblewrap's --unshare-all: SysV objects and
    /// sockets of the host's, abstract Unix sockets included, are not there
    /// to reach even if a rule let a call through). Before the seccomp
    /// filter, which makes `unshare` fatal, and before capabilities are
    /// dropped (root needs CAP_SYS_ADMIN; anyone else gets a user namespace
    /// mapping only their own ids). A process with threads cannot enter a
    /// user namespace; the worker has none yet (Landlock needs that too).
    /// Where the kernel lends none (user namespaces disabled or
    /// restricted), the worker goes on without: the filter refuses the same
    /// calls.
    /// With `fileView`, a mount namespace too, which the view needs: the
    /// host found that this kernel lends one, so failing to enter it now
    /// refuses the plug-in rather than run it without the view it was
    /// promised.
    static func enterNamespaces(_ wanted: Namespaces, fileView: Bool) throws(SandboxError) -> [String] {
        guard !wanted.isEmpty || fileView else { return [] }
        let entered = xcallback_enter_namespaces(wanted.contains(.ipc) ? 1 : 0, wanted.contains(.network) ? 1 : 0,
                                                 fileView ? 1 : 0)
        if entered < 0 {
            // In a user namespace without its ids mapped, the worker's files
            // would show another owner: refuse rather than run half-made.
            guard errno != EIO else {
                throw SandboxError("cannot map the worker's ids in its user namespace: \(String(cString: strerror(errno)))")
            }
            guard !fileView else {
                throw SandboxError("cannot enter a mount namespace for the worker's file view: \(String(cString: strerror(errno)))")
            }
            return ["no namespaces (\(String(cString: strerror(errno))))"]
        }
        return Namespaces(rawValue: entered).subtracting(.mount).names.map { "\($0) namespace" }
    }

    /// Makes the scratch folder the current folder, so relative paths a
    /// plug-in writes land there. Called once the plug-in is loaded, not
    /// before: a binding manifest may name its library relative to itself,
    /// and the host names plug-ins relative to its own folder.
    public static func enterScratch(_ plan: SandboxPlan) throws(SandboxError) {
        guard chdir(plan.scratch) == 0 else {
            throw SandboxError("cannot enter the scratch folder \(plan.scratch): \(String(cString: strerror(errno)))")
        }
    }

    private static func landlockRuleset(_ plan: SandboxPlan, abi: Int, loadedFrom: [String]) throws(SandboxError) -> Int32 {
        let capabilities = plan.capabilities
        let handledNetwork: UInt64 = abi >= 4 && !capabilities.network
            ? LandlockRights.bindTCP | LandlockRights.connectTCP : 0
        let scoped: UInt64 = abi >= 6 ? LandlockRights.scopeSignal | LandlockRights.scopeAbstractUnixSocket : 0
        let handled = LandlockRights.handledFileSystem(abi: abi)
        let ruleset = xcallback_landlock_create(handled, handledNetwork, scoped)
        guard ruleset >= 0 else { throw SandboxError("landlock_create_ruleset: \(String(cString: strerror(errno)))") }

        func allow(_ path: String, _ rights: UInt64) throws(SandboxError) {
            guard xcallback_landlock_allow(ruleset, path, rights & handled) >= 0 else {
                close(ruleset)
                throw SandboxError("landlock_add_rule for \(path): \(String(cString: strerror(errno)))")
            }
        }
        // Executing needs the right on the program and on its loader.
        let execute = capabilities.exec ? LandlockRights.execute : 0
        for path in systemReadable + mappedFolders { try allow(path, LandlockRights.read | execute) }
        for file in [plan.pluginPath] + loadedFrom { try allow(folder(of: file), LandlockRights.read) }
        for device in devices {
            try allow(device, LandlockRights.readFile | LandlockRights.writeFile | LandlockRights.truncate)
        }
        if capabilities.exec {
            for path in programFolders + ["/etc/alternatives"] { try allow(path, LandlockRights.read | LandlockRights.execute) }
        }
        // What the file view binds in for a grant, Landlock allows too.
        if capabilities.network { for path in FileView.networkFiles { try allow(path, LandlockRights.read) } }
        if capabilities.ipc { try allow("/dev/shm", LandlockRights.read | LandlockRights.write) }
        for path in capabilities.filesRead { try allow(path, LandlockRights.read | execute) }
        for path in capabilities.filesWrite { try allow(path, LandlockRights.read | LandlockRights.write) }
        try allow(plan.scratch, LandlockRights.read | LandlockRights.write)
        return ruleset
    }

    /// Whether this process runs under ThreadSanitizer or AddressSanitizer.
    static var runsUnderSanitizer: Bool {
        dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil
    }

    private static func limit(_ resource: Int32, _ value: UInt64, _ name: String) throws(SandboxError) {
        var current = rlimit()
        getrlimit(resource, &current)
        // Never raise a limit the operator already set lower.
        let target = min(rlim_t(value), current.rlim_max)
        var limit = rlimit(rlim_cur: target, rlim_max: target)
        guard setrlimit(resource, &limit) == 0 else {
            throw SandboxError("setrlimit (\(name)): \(String(cString: strerror(errno)))")
        }
    }

    static func folder(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
    }

    /// The folders of every file mapped now (the worker's own executable
    /// and the Swift runtime among them): what the plug-in may need to
    /// load its dependencies from.
    /// Reads the folders of what is mapped now, so that workers forked from
    /// this process (the zygote) find them read already.
    public static func prepareForForking() {
        _ = mappedFolders
        // Type metadata every worker's sandbox instantiates (the layers'
        // names): built here once, not in each forked worker.
        _ = Namespaces(rawValue: Int32(XCALLBACK_NAMESPACE_IPC | XCALLBACK_NAMESPACE_NETWORK)).names
    }

    /// The folders of every file mapped into this process, read once, before
    /// any plug-in is loaded: a worker forked from the zygote has mapped what
    /// the zygote had (its plug-in comes after its sandbox), and reading
    /// /proc/self/maps was a fifth of a forked worker's start.
    static let mappedFolders: [String] = readMappedFolders()

    private static func readMappedFolders() -> [String] {
        guard let text = readText("/proc/self/maps") else { return [] }
        var folders = Set<String>()
        for line in text.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            guard !path.hasSuffix(" (deleted)"), !path.hasPrefix("/proc/"), !path.hasPrefix("/dev/"),
                  !path.hasPrefix("/memfd:") else { continue }
            folders.insert(folder(of: path))
        }
        return folders.sorted()
    }

    private static func threadCount() -> Int {
        guard let directory = opendir("/proc/self/task") else { return 1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return max(count, 1)
    }

    /// Tasks (threads included) of `uid`, as RLIMIT_NPROC counts them.
    private static func tasksOfUser(_ uid: uid_t) -> Int {
        guard let directory = opendir("/proc") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name.first?.isNumber == true, let status = readText("/proc/\(name)/status") else { continue }
            var owner: uid_t?
            var threads = 0
            for line in status.split(separator: "\n") {
                if line.hasPrefix("Uid:") { owner = line.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first.flatMap { uid_t($0) } }
                if line.hasPrefix("Threads:") { threads = Int(line.split(separator: "\t").last ?? "") ?? 1 }
            }
            if owner == uid { count += threads }
        }
        return count
    }

    private static func readText(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
