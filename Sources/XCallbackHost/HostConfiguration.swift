import XCallbackURL
import XCallbackSandbox

/// How plug-ins run (`--isolation`).
public enum Isolation: String, Sendable, CaseIterable {
    /// Each plug-in in a worker process: a crash is an error outcome.
    case process
    /// Plug-ins inside the host: fastest; a crash takes the host down.
    case none
}

/// Everything `xcallback run` can be told.
public struct HostConfiguration: Sendable {
    public var pluginDirectories: [String]
    public var isolation: Isolation = .process
    /// The executable started as `EXECUTABLE __worker FILE` for workers
    /// (this same binary).
    public var workerExecutable = "/proc/self/exe"
    public var restartPolicy = RestartPolicy()
    public var timeout: Duration = .seconds(30)
    /// How long in-flight requests may finish after SIGINT/SIGTERM.
    public var gracePeriod: Duration = .seconds(5)
    /// A socket connection with no complete line for this long, and no
    /// request in flight, is closed.
    public var idleTimeout: Duration = .seconds(60)
    public var keepOrder = false
    public var output: OutputFormat = .url
    public var openCommand: String?
    /// Which callback schemes `--open` may open.
    public var openSchemes = OpenSchemePolicy()
    public var limits = ParseLimits.default
    public var allowInsecurePlugins = false
    /// How hard to insist on the workers' sandbox (`--sandbox`).
    public var sandbox = SandboxMode.auto
    /// The operator's grants (`--sandbox-config`).
    public var sandboxPolicy = SandboxPolicy()
    /// Who a root host's workers run as (`--worker-user`); nil when the
    /// host is not root.
    public var workerIdentity: WorkerIdentity?
    /// Whether the host keeps the counts `run --metrics` serves (off: the
    /// request path does not even look for them).
    public var collectsMetrics = false
    /// The version `xcallback_build_info` names.
    public var version = "unknown"

    public init(pluginDirectories: [String]) {
        self.pluginDirectories = pluginDirectories
    }

    /// The plug-in directories when none are named: `$XCALLBACK_PLUGIN_PATH`
    /// (colon-separated), else the per-user and system directories.
    public static func defaultPluginDirectories(environment: [String: String]) -> [String] {
        if let path = environment["XCALLBACK_PLUGIN_PATH"], !path.isEmpty {
            return path.split(separator: ":").map(String.init)
        }
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"].map { $0 + "/.local/share" } ?? "/nonexistent")
        return [dataHome + "/xcallback/plugins", "/usr/local/lib/xcallback/plugins", "/usr/lib/xcallback/plugins"]
    }
}
