import CHostSupport
import Logging
import Synchronization
import XCallbackBridge
import XCallbackMetrics
import XCallbackRouting
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The xcallback host: loads plug-ins, reads request lines from stdin, a
/// FIFO or a Unix socket, and writes one outcome record per line.
public final class Host: Sendable {
    public let configuration: HostConfiguration
    let logger: Logger
    let registry = PluginRegistry()
    let dispatcher: Dispatcher
    let watchdog = StallWatchdog()
    let opener: CallbackOpener?
    let stopSignal = StopSignal()
    /// The built-in `await` and `response` routes (client correlation).
    let responses: ResponseWaiters
    /// How the records written so far ended, over every input stream.
    let tally = OutcomeTally()
    /// One reconcile at a time (watcher and SIGHUP may race).
    let rescanLock = Lock(())
    let spawner: WorkerSpawner
    let discovery: PluginDiscovery
    /// The sandbox every worker enters, and the plug-ins' scratch folders.
    let sandboxing: WorkerSandboxing
    /// The stamp of every plug-in file looked at, loaded or refused.
    let stamps = Lock<[String: FileStamp]>([:])
    /// Set when a write to stdout found its reader gone: the host then ends
    /// quietly (docs/usage.md, "run"), with no warning about the input it left.
    let outputClosed = Atomic<Bool>(false)
    /// The counts `run --metrics` serves; nil unless `collectsMetrics`.
    public let metrics: HostMetrics?

    public init(configuration: HostConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.spawner = WorkerSpawner(output: WorkerOutputRelay(logger: logger))
        // A descriptor a worker holds the other end of (its socket, its
        // stdout and stderr pipes) can be set to signal an owner with
        // F_SETOWN: the host's pid, given a kernel without Landlock's
        // signal scope and a plug-in past the filter. SIGIO's default ends
        // a process; the host asks for neither signal, so it ignores both.
        signal(SIGIO, SIG_IGN)
        signal(SIGURG, SIG_IGN)
        let sandboxesWorkers = configuration.isolation == .process && configuration.sandbox != .off
        let kernel = KernelSupport.probe(namespaces: sandboxesWorkers)
        self.metrics = configuration.collectsMetrics
            ? Self.makeMetrics(configuration: configuration, layers: sandboxesWorkers ? kernel.layers(for: .default) : [])
            : nil
        self.dispatcher = Dispatcher(
            registry: registry, limits: configuration.limits, timeout: configuration.timeout,
            keepsInput: configuration.output == .jsonl, logger: logger, metrics: metrics)
        self.opener = configuration.openCommand.map {
            CallbackOpener(command: $0, schemes: configuration.openSchemes, logger: logger)
        }
        self.responses = ResponseWaiters(logger: logger, counts: metrics?.plugin(named: Correlation.scheme))
        self.discovery = PluginDiscovery(
            directories: configuration.pluginDirectories,
            security: FileSecurity(allowInsecure: configuration.allowInsecurePlugins))
        // Trying namespaces (above) forks a child that makes a network
        // namespace (about half a millisecond of the kernel's): only for a
        // host whose workers get them.
        self.sandboxing = WorkerSandboxing(mode: configuration.sandbox, policy: configuration.sandboxPolicy,
                                           kernel: kernel, identity: configuration.workerIdentity)
        registry.addBuiltIn(responses, routes: ResponseWaiters.routes)
        sampleWorkersForMetrics()
        countInFlightForMetrics()
    }

    /// Every plug-in file found, loaded or refused.
    public var plugins: [PluginStatus] { registry.statuses }

    /// How the records written so far ended (the summary line's numbers).
    public var outcomes: OutcomeCounts { tally.snapshot }

    /// Whether the host stopped because its stdout was closed.
    public var stoppedByClosedOutput: Bool { outputClosed.load(ordering: .acquiring) }

    /// Says once, at start, what the workers' sandbox lacks on this kernel;
    /// with `--sandbox strict`, refuses to start instead.
    public func checkSandbox() throws(HostSetupError) {
        guard configuration.isolation == .process, configuration.sandbox != .off else { return }
        logger.info("workers' sandbox: \(sandboxing.kernel.layers(for: .default).joined(separator: ", ")), no-new-privs, rlimits (a plug-in granted 'ipc' or 'network' keeps the host's namespace of that kind)")
        guard let missing = sandboxing.kernel.missing else { return }
        if configuration.sandbox == .strict {
            throw HostSetupError("--sandbox strict: this kernel lacks \(missing); refusing to start (--sandbox auto runs with the layers it has)")
        }
        logger.warning("\(sandboxing.kernel.warning ?? missing)")
    }
}
