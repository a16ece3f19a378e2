import ArgumentParser
import Logging
import XCallbackHost
import XCallbackQueue
import XCallbackSandbox
import XCallbackURL

#if canImport(Glibc)
import Glibc
#endif

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the host: read request URLs, write one outcome record per request.")

    @OptionGroup var plugins: PluginDirectoryOptions

    @Option(help: ArgumentHelp("Read requests from this FIFO (created mode 0600 if missing) until SIGINT/SIGTERM.", valueName: "path"))
    var fifo: String?

    @Option(help: ArgumentHelp("Serve requests on this Unix stream socket until SIGINT/SIGTERM (with --fifo: both). Under systemd socket activation, the socket systemd passes is served instead.", valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("Consume this durable queue (a postgresql:// URL; see `xcallback queue`) instead of reading stdin; records are written once recorded.", valueName: "url"))
    var queue: String?

    @Option(help: ArgumentHelp("With --queue: seconds a host's lease on its requests lasts without a heartbeat (it heartbeats three times per lease).", valueName: "seconds"))
    var lease: Double = 15

    @Option(name: .customLong("batch-size"), help: "With --queue: requests claimed at once.")
    var batchSize: Int = 256

    @Option(help: ArgumentHelp("With --queue: seconds outcomes are kept before hosts prune them.", valueName: "seconds"))
    var retention: Double = defaultRetention

    static let defaultRetention: Double = 7 * 86_400

    @Option(help: "How plug-ins run: process (each in its own worker process) or none (inside the host: fastest, but a plug-in crash kills the host).")
    var isolation: IsolationArgument = .process

    @OptionGroup var sandbox: SandboxOptions

    @Option(name: .customLong("restart-limit"), help: "Crashes of one plug-in tolerated within --restart-window before it is disabled.")
    var restartLimit: Int = 5

    @Option(name: .customLong("restart-window"), help: ArgumentHelp("The window, in seconds, for --restart-limit.", valueName: "seconds"))
    var restartWindow: Double = 60

    @Option(name: .customLong("quarantine"), help: ArgumentHelp("Seconds a plug-in past --restart-limit stays disabled before it is tried again; doubles each time in a row, up to 600.", valueName: "seconds"))
    var quarantine: Double = 30

    @Option(help: ArgumentHelp("Seconds a request may take before it is answered Timeout.", valueName: "seconds"))
    var timeout: Double = 30

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp("Seconds a socket connection may go without sending a complete request line, with none in flight, before it is closed.", valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(name: .customLong("grace-period"), help: ArgumentHelp("Seconds in-flight requests may finish after SIGINT/SIGTERM.", valueName: "seconds"))
    var gracePeriod: Double = 5

    @Flag(name: [.short, .customLong("keep-order")], help: "Write records in input order (default: as requests complete).")
    var keepOrder = false

    @Option(help: "Record format: url or jsonl.")
    var output: OutputFormatArgument = .url

    @Option(help: ArgumentHelp("Run COMMAND with each callback URL as its only argument instead of printing it (a program on PATH, or a path; checked at start).", valueName: "command"))
    var open: String?

    @Option(name: .customLong("open-scheme"), help: ArgumentHelp("Let --open open callbacks of SCHEME, one it refuses by default (file, javascript, data and others that act on this machine; see the README). Repeatable.", valueName: "scheme"))
    var openSchemes: [String] = []

    @Option(name: .customLong("max-line-bytes"), help: "Longest accepted request line; longer lines are InvalidURL.")
    var maxLineBytes: Int = 65_536

    @Option(name: .customLong("log-level"), help: "stderr diagnostics: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "warning"

    @Option(name: .customLong("log-format"), help: "stderr diagnostics format: text, or json (one object per line).")
    var logFormat: LogFormatArgument = .text

    @Flag(name: .customLong("no-summary"), help: "No outcome summary line on stderr at exit (SIGUSR1 still prints one).")
    var noSummary = false

    @Flag(name: .customLong("no-progress"), help: "No progress line, even when reading a file with stderr on a terminal.")
    var noProgress = false

    func validate() throws {
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
        if !(lease >= 1) { throw ValidationError("--lease must be at least 1 second") }
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
        if !(retention > 0) { throw ValidationError("--retention must be a positive number of seconds") }
        if Logger.Level(rawValue: logLevel) == nil {
            let levels = Logger.Level.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            throw ValidationError("The value '\(logLevel)' is invalid for '--log-level <log-level>'. Please provide one of \(levels).")
        }
    }

    func run() throws {
        // First, before any thread starts: it clears LISTEN_* from the environment.
        let activated: InheritedSocket?
        do {
            activated = try SocketActivation.takeInheritedSocket()
        } catch {
            throw Failure.exit(error.message)
        }
        Diagnostics.bootstrap(level: Logger.Level(rawValue: logLevel) ?? .warning, format: logFormat.value)
        // Workers log to the same stderr: in the same format.
        setenv(Diagnostics.formatVariable, logFormat.value.rawValue, 1)
        let logger = Diagnostics.logger
        ProcessHardening.makeNondumpable()
        // Signals are taken by one thread with sigwait; every other thread
        // (created after this) inherits the mask and never sees them.
        let signals = SignalWaiter.blockHostSignals()
        signal(SIGPIPE, SIG_IGN)

        // stdout is for records only: keep it for the host, and point fd 1 at
        // stderr so nothing a plug-in prints can reach it.
        let records = dup(1)
        _ = fcntl(records, F_SETFD, FD_CLOEXEC)
        dup2(2, 1)

        var configuration = HostConfiguration(pluginDirectories: plugins.resolved)
        configuration.isolation = isolation.value
        configuration.timeout = .milliseconds(Int64(timeout * 1000))
        configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.gracePeriod = .milliseconds(Int64(gracePeriod * 1000))
        configuration.keepOrder = keepOrder
        configuration.output = output.value
        configuration.openCommand = open
        configuration.openSchemes = OpenSchemePolicy(allowing: openSchemes)
        configuration.limits = ParseLimits(maxLineBytes: maxLineBytes)
        configuration.allowInsecurePlugins = plugins.allowInsecure
        configuration.workerExecutable = Environment.executable
        configuration.sandbox = sandbox.mode.value
        configuration.sandboxPolicy = try sandbox.policy()
        try checkBeforeStart()
        configuration.restartPolicy.limit = restartLimit
        configuration.restartPolicy.window = .milliseconds(Int64(restartWindow * 1000))
        configuration.restartPolicy.cooldown = .milliseconds(Int64(quarantine * 1000))

        let host = Host(configuration: configuration, logger: logger)
        do {
            try host.checkSandbox()
            try host.loadPlugins(requireDirectories: plugins.areExplicit)
        } catch {
            throw Failure.exit(error.message)
        }
        let format = logFormat.value
        if let queue {
            try runQueue(queue, host: host, signals: signals, records: records, format: format)
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
            } else {
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

extension RunCommand {
    /// `run --queue`: the host consumes the queue until SIGINT/SIGTERM.
    func runQueue(_ url: String, host: Host, signals: SignalWaiter, records: Int32, format: LogFormat) throws {
        let location: QueueLocation
        do { location = try QueueLocation(parsing: url) } catch { throw Failure.exit(error.message) }
        var options = QueueConsumerOptions()
        options.lease = .milliseconds(Int64(lease * 1000))
        options.batchSize = batchSize
        options.maxInFlight = max(batchSize * 8, 1_024)
        options.retention = .milliseconds(Int64(retention * 1000))
        let consumer = QueueConsumer(location: location, options: options, host: host, format: output.value,
                                     output: records, logger: Diagnostics.logger)
        signals.start(
            onStop: {
                host.requestStop()
                consumer.stop()
            },
            onReload: { host.rescan() },
            onReport: { Diagnostics.writeSummary(host.outcomes, format: format, final: false) })
        do {
            try consumer.run()
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

enum OutputFormatArgument: String, ExpressibleByArgument, CaseIterable {
    case url, jsonl
    var value: OutputFormat { OutputFormat(rawValue: rawValue)! }
}

