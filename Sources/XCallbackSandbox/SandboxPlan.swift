import XCallbackURL

/// Everything a worker needs to build its sandbox, decided by the host and
/// handed to the worker on its command line (`--sandbox PLAN`), where an
/// operator can also see it (`ps`).
public struct SandboxPlan: Sendable, Equatable {
    public var capabilities: Capabilities
    /// The worker's private, writable folder (also its current folder and `TMPDIR`).
    public var scratch: String
    /// The plug-in file; its folder is readable.
    public var pluginPath: String
    /// Refuse to run unless every layer applies (`--sandbox strict`).
    public var strict: Bool
    /// Build the worker a file view of its own (the host found that this
    /// kernel lends a mount namespace in which one can be built).
    public var fileView: Bool
    /// The identity a root host's worker takes; nil: it keeps the host's
    /// (which is not root).
    public var identity: WorkerIdentity?

    public init(capabilities: Capabilities, scratch: String, pluginPath: String, strict: Bool, fileView: Bool = false,
                identity: WorkerIdentity? = nil) {
        self.capabilities = capabilities
        self.scratch = scratch
        self.pluginPath = pluginPath
        self.strict = strict
        self.fileView = fileView
        self.identity = identity
    }

    /// `key=value&…`, values percent-encoded like a URL query (paths may hold any byte but NUL).
    public var encoded: String {
        var fields: [(String, String)] = [
            ("network", capabilities.network ? "1" : "0"), ("exec", capabilities.exec ? "1" : "0"),
            ("ipc", capabilities.ipc ? "1" : "0"),
            ("memory", String(capabilities.memoryMiB)), ("open_files", String(capabilities.openFiles)),
            ("processes", String(capabilities.processes)), ("scratch", scratch), ("plugin", pluginPath),
            ("strict", strict ? "1" : "0"), ("scratch_size", String(capabilities.scratchMiB)),
            ("view", fileView ? "1" : "0"),
        ]
        if let identity { fields.append(("user", identity.encoded)) }
        fields += capabilities.filesRead.map { ("read", $0) }
        fields += capabilities.filesWrite.map { ("write", $0) }
        fields += capabilities.environment.map { ("environment", $0) }
        return fields.map { "\($0)=\(PercentEncoding.encode($1))" }.joined(separator: "&")
    }

    /// The plan `encoded` wrote; nil for anything else.
    public init?(encoded: String) {
        var capabilities = Capabilities.default
        var scratch: String?, plugin: String?, strict = false, fileView = false
        var identity: WorkerIdentity?
        for field in encoded.split(separator: "&") {
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let value = try? PercentEncoding.decode(parts[1]) else { return nil }
            switch parts[0] {
            case "network": capabilities.network = value == "1"
            case "exec": capabilities.exec = value == "1"
            case "ipc": capabilities.ipc = value == "1"
            case "memory": guard let number = Int(value) else { return nil }; capabilities.memoryMiB = number
            case "open_files": guard let number = Int(value) else { return nil }; capabilities.openFiles = number
            case "processes": guard let number = Int(value) else { return nil }; capabilities.processes = number
            case "scratch": scratch = value
            case "plugin": plugin = value
            case "strict": strict = value == "1"
            case "scratch_size": guard let number = Int(value) else { return nil }; capabilities.scratchMiB = number
            case "view": fileView = value == "1"
            case "user": guard let decoded = WorkerIdentity(encoded: value) else { return nil }; identity = decoded
            case "read": capabilities.filesRead.append(value)
            case "write": capabilities.filesWrite.append(value)
            case "environment": capabilities.environment.append(value)
            default: return nil
            }
        }
        guard let scratch, let plugin else { return nil }
        self.init(capabilities: capabilities, scratch: scratch, pluginPath: plugin, strict: strict, fileView: fileView,
                  identity: identity)
    }
}
