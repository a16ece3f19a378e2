import ArgumentParser
import Logging
import XCallbackHost
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL
import XCallbackWasm

#if canImport(Glibc)
import Glibc
#endif

/// `run`, as `Edition` runs it: only `xcallback-queue` consumes a queue.
package struct RunCommand<Edition: CLIEdition>: ParsableCommand {
    package static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "run",
            abstract: "Run the host: read request URLs, write one outcome record per request.",
            discussion: discussion)
    }

    // Grouped for --help (RunOptions.swift).
    @OptionGroup(title: "Input") var input: RunInputOptions
    @OptionGroup(title: "Plug-ins") var plugins: PluginDirectoryOptions

    @OptionGroup(title: "Queue") var queueOptions: RunQueueOptions
    @OptionGroup(title: "Plug-ins") var workers: RunPluginOptions
    @OptionGroup(title: "Plug-ins") var sandbox: SandboxOptions
    @OptionGroup(title: "Limits") var limits: RunLimitOptions
    @OptionGroup(title: "Output") var records: RunOutputOptions
    @OptionGroup(title: "Diagnostics") var diagnostics: RunDiagnosticOptions

    package init() {}

    package func validate() throws {
        if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
        if gracePeriod < 0 { throw ValidationError("--grace-period cannot be negative") }
        if restartLimit < 0 { throw ValidationError("--restart-limit cannot be negative") }
        if !(idleTimeout > 0) { throw ValidationError("--idle-timeout must be a positive number of seconds") }
        if !(restartWindow > 0) { throw ValidationError("--restart-window must be a positive number of seconds") }
        if !(quarantine > 0) || quarantine > 600 { throw ValidationError("--quarantine must be a number of seconds above 0 and at most 600") }
        if maxLineBytes < 16 { throw ValidationError("--max-line-bytes must be at least 16") }
        if queue != nil && (fifo != nil || socket != nil) {
            throw ValidationError("--queue reads only the queue: leave out --fifo and --socket")
        }
        if Logger.Level(rawValue: logLevel) == nil {
            let levels = Logger.Level.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            throw ValidationError("The value '\(logLevel)' is invalid for '--log-level <log-level>'. Please provide one of \(levels).")
        }
        if let metrics {
            do { _ = try MetricsAddress(parsing: metrics) } catch { throw ValidationError(error.message) }
        }
        if !files.isEmpty, let served = [("--fifo", fifo), ("--socket", socket), ("--queue", queue)].first(where: { $0.1 != nil }) {
            throw ValidationError("FILE arguments are read like stdin; \(served.0) serves its own input: leave out one or the other")
        }
    }

    package func run() throws {
        // First, before any thread starts: it clears LISTEN_* from the environment.
        let activated: InheritedSocket?
        do {
            activated = try SocketActivation.takeInheritedSocket()
        } catch {
            throw Failure.exit(error.message)
        }
        Diagnostics.bootstrap(level: Logger.Level(rawValue: logLevel) ?? .warning, format: logFormat.value)
        let logger = Diagnostics.logger
        ProcessHardening.makeNondumpable()
        // Signals are taken by one thread from a signalfd; every other
        // thread (created after this) inherits the mask and never sees them.
        // `main` blocked them already (`blockEarly`); this keeps `run` right
        // whoever calls it.
        let signals = SignalWaiter.blockHostSignals()
        signal(SIGPIPE, SIG_IGN)
        // A crash, from here on (in-process plug-ins included), is one line
        // and death by the signal, not the Swift runtime's backtrace.
        CrashReport.install(format: logFormat.value)

        // stdout is for records only: keep it for the host, and point fd 1 at
        // stderr so nothing a plug-in prints can reach it.
        let records = dup(1)
        _ = fcntl(records, F_SETFD, FD_CLOEXEC)
        dup2(2, 1)

        var configuration = HostConfiguration(pluginDirectories: plugins.resolved)
        configuration.isolation = isolation.value
        configuration.timeout = .milliseconds(Int64(timeout * 1000))
        #if Wasm
        WasmRuntime.callTimeout = configuration.timeout
        #endif
        configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.gracePeriod = .milliseconds(Int64(gracePeriod * 1000))
        configuration.keepOrder = keepOrder
        configuration.output = output.value
        configuration.openCommand = open
        configuration.openSchemes = OpenSchemePolicy(allowing: openSchemes)
        configuration.limits = ParseLimits(maxLineBytes: maxLineBytes)
        configuration.allowInsecurePlugins = plugins.allowInsecure
        // Workers run the lean `xcallback`, even from `xcallback-queue`.
        configuration.workerExecutable = Edition.workerExecutable
        configuration.sandbox = sandbox.mode.value
        configuration.sandboxPolicy = try sandbox.policy()
        configuration.workerIdentity = try sandbox.identity()
        try checkBeforeStart()
        configuration.restartPolicy.limit = restartLimit
        configuration.restartPolicy.window = .milliseconds(Int64(restartWindow * 1000))
        configuration.restartPolicy.cooldown = .milliseconds(Int64(quarantine * 1000))
        configuration.collectsMetrics = metrics != nil
        configuration.version = XCallbackVersion.current

        let host = Host(configuration: configuration, logger: logger)
        do {
            try host.checkSandbox()
            try host.loadPlugins(requireDirectories: plugins.areExplicit)
        } catch {
            throw Failure.exit(error.message)
        }
        let metricsServer = try startMetricsServer(for: host, logger: logger)
        defer { metricsServer?.stop() }
        let format = logFormat.value
        if let queue {
            try Edition.runQueue(queue, for: self, host: host, signals: signals, records: records, format: format)
            return
        }
        signals.start(
            onStop: { host.requestStop() },
            onReload: { host.rescan() },
            onReport: { Diagnostics.writeSummary(host.outcomes, format: format, final: false) })
        let inputs = InputSelection.inputs(fifo: fifo, socket: socket, activated: activated, logger: logger)
        do {
            if !inputs.isEmpty {
                try host.serve(inputs, output: records)
            } else if !files.isEmpty {
                serve(files: files, host: host, records: records)
            } else {
                // A person who typed `xcallback run` and nothing else would
                // otherwise wait in silence, not knowing what it waits for.
                if isatty(0) == 1 && format == .text {
                    Diagnostics.console.write("xcallback: reading request URLs from the terminal, one per line; Ctrl-D ends "
                        + "(pipe a file in, or serve --fifo or --socket)\n")
                }
                let progress = !noProgress && ProgressReporter.isWanted(input: 0, diagnostics: 2)
                    ? ProgressReporter(console: Diagnostics.console, input: 0) { host.outcomes } : nil
                progress?.start()
                host.serve(input: 0, output: records)
                progress?.stop()
            }
        } catch {
            throw Failure.exit(error.message)
        }
        if !noSummary { Diagnostics.writeSummary(host.outcomes, format: format, final: true) }
    }
}

enum IsolationArgument: String, ExpressibleByArgument, CaseIterable {
    case process, none
    var value: Isolation { Isolation(rawValue: rawValue)! }
}

package enum OutputFormatArgument: String, ExpressibleByArgument, CaseIterable {
    case url, jsonl
    package var value: OutputFormat { OutputFormat(rawValue: rawValue)! }
}

extension RunCommand {
    /// With `--metrics`: listens, and serves the host's counts on a thread
    /// of its own until `run` returns.
    func startMetricsServer(for host: Host, logger: Logger) throws -> MetricsServer? {
        guard let metrics, let counts = host.metrics else { return nil }
        do {
            let asked = try MetricsAddress(parsing: metrics)
            let server = try MetricsServer(address: asked, metrics: counts)
            server.start()
            // Both at the default level: an exposure nobody chose knowingly
            // must show, and a port the kernel chose is found nowhere else.
            if let exposure = server.address.exposure {
                logger.warning("--metrics \(server.address) \(exposure); bind to 127.0.0.1 or a socket path unless a scraper elsewhere needs it")
            }
            if case .tcp(_, 0) = asked {
                logger.warning("serving metrics at \(server.address) (GET /metrics; port chosen for --metrics \(metrics))")
            } else {
                logger.notice("serving metrics at \(server.address) (GET /metrics)")
            }
            return server
        } catch {
            throw Failure.exit(error.message)
        }
    }
}
