/// What a plug-in's worker may do beyond running its own code: the
/// declared, granted or effective set.
///
/// The defaults are the sandbox a plug-in gets when it declares nothing: no
/// network, no programs, no processes, reads limited to what it needs to
/// load and run, writes only in its private scratch folder.
public struct Capabilities: Sendable, Equatable {
    /// Outbound sockets (`socket()` of any family; TCP connect and bind;
    /// `connect`, `sendto` an address, Unix datagram `socketpair`), and the
    /// host's network namespace.
    public var network = false
    /// System V IPC (shared memory, message queues, semaphores), and the
    /// host's IPC namespace. (POSIX message queues stay refused: Landlock
    /// sees them as files outside the grant.)
    public var ipc = false
    /// Starting programs (`execve`), from the system's program folders.
    public var exec = false
    /// Extra folders or files it may read, beyond the defaults.
    public var filesRead: [String] = []
    /// Extra folders or files it may write (and read).
    public var filesWrite: [String] = []
    /// Ceiling on its data segment (heap and private writable mappings,
    /// thread stacks included: 8 MiB of address space each), MiB.
    public var memoryMiB = 4096
    /// Ceiling on open descriptors.
    public var openFiles = 128
    /// Processes it may start (0: none; `fork` fails with EAGAIN).
    public var processes = 0
    /// Names of the host's environment variables it sees, beyond the few
    /// every worker gets (`SandboxEnvironment.alwaysPassed`).
    public var environment: [String] = []
    /// Size of its scratch folder, MiB: a memory-backed file system of its
    /// own in its file view, so a plug-in cannot fill the host's disk.
    public var scratchMiB = 64

    public init() {}

    public static let `default` = Capabilities()

    /// The part of `self` that `ceiling` allows: the effective set is the
    /// intersection of what a plug-in declares and what the operator grants.
    public func narrowed(by ceiling: CapabilityCeiling) -> Capabilities {
        var result = self
        if let network = ceiling.network { result.network = result.network && network }
        if let exec = ceiling.exec { result.exec = result.exec && exec }
        if let ipc = ceiling.ipc { result.ipc = result.ipc && ipc }
        if let allowed = ceiling.filesRead { result.filesRead = result.filesRead.filter { Self.path($0, isWithin: allowed) } }
        if let allowed = ceiling.filesWrite { result.filesWrite = result.filesWrite.filter { Self.path($0, isWithin: allowed) } }
        if let memory = ceiling.memoryMiB { result.memoryMiB = min(result.memoryMiB, memory) }
        if let files = ceiling.openFiles { result.openFiles = min(result.openFiles, files) }
        if let processes = ceiling.processes { result.processes = min(result.processes, processes) }
        if let names = ceiling.environment { result.environment = result.environment.filter(names.contains) }
        if let scratch = ceiling.scratchMiB { result.scratchMiB = min(result.scratchMiB, scratch) }
        return result
    }

    /// Whether `path` is one of `roots` or lies beneath one (by its text:
    /// paths are checked absolute and without `..` when they are read).
    static func path(_ path: String, isWithin roots: [String]) -> Bool {
        roots.contains { root in
            let trimmed = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
            return path == trimmed || path.hasPrefix(trimmed == "/" ? "/" : trimmed + "/")
        }
    }

    /// One line for `check`, `plugins` and the log: what differs from
    /// nothing at all, then the ceilings.
    public var summary: String {
        var parts: [String] = []
        if network { parts.append("network") }
        if exec { parts.append("exec") }
        if ipc { parts.append("ipc") }
        if !filesRead.isEmpty { parts.append("read " + filesRead.joined(separator: ",")) }
        if !filesWrite.isEmpty { parts.append("write " + filesWrite.joined(separator: ",")) }
        if !environment.isEmpty { parts.append("environment " + environment.joined(separator: ",")) }
        if parts.isEmpty { parts.append("no network, no exec") }
        parts.append("memory \(memoryMiB) MiB")
        parts.append("\(openFiles) files")
        parts.append(processes == 0 ? "no processes" : "\(processes) processes")
        parts.append("scratch \(scratchMiB) MiB")
        return parts.joined(separator: ", ")
    }
}

/// The operator's side: a ceiling on each capability, or nil for "whatever
/// the plug-in declares".
public struct CapabilityCeiling: Sendable, Equatable {
    public var network: Bool?
    public var exec: Bool?
    public var ipc: Bool?
    public var filesRead: [String]?
    public var filesWrite: [String]?
    public var memoryMiB: Int?
    public var openFiles: Int?
    public var processes: Int?
    public var environment: [String]?
    public var scratchMiB: Int?

    public init() {}

    /// `self` with every field `specific` sets replaced by it: a plug-in's
    /// own section over the section for all.
    public func overridden(by specific: CapabilityCeiling) -> CapabilityCeiling {
        var result = self
        result.network = specific.network ?? network
        result.exec = specific.exec ?? exec
        result.ipc = specific.ipc ?? ipc
        result.filesRead = specific.filesRead ?? filesRead
        result.filesWrite = specific.filesWrite ?? filesWrite
        result.memoryMiB = specific.memoryMiB ?? memoryMiB
        result.openFiles = specific.openFiles ?? openFiles
        result.processes = specific.processes ?? processes
        result.environment = specific.environment ?? environment
        result.scratchMiB = specific.scratchMiB ?? scratchMiB
        return result
    }
}
