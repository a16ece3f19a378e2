import ArgumentParser
import Logging
import XCallbackHost
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

    @Option(help: ArgumentHelp("Serve requests on this Unix stream socket until SIGINT/SIGTERM.", valueName: "path"))
    var socket: String?

    @Option(help: "How plug-ins run: process (each in its own worker process) or none (inside the host: fastest, but a plug-in crash kills the host).")
    var isolation: IsolationArgument = .process

    @Option(name: .customLong("restart-limit"), help: "Crashes of one plug-in tolerated within --restart-window before it is disabled.")
    var restartLimit: Int = 5

    @Option(name: .customLong("restart-window"), help: ArgumentHelp("The window, in seconds, for --restart-limit.", valueName: "seconds"))
    var restartWindow: Double = 60

    @Option(help: ArgumentHelp("Seconds a request may take before it is answered Timeout.", valueName: "seconds"))
    var timeout: Double = 30

    @Option(name: .customLong("grace-period"), help: ArgumentHelp("Seconds in-flight requests may finish after SIGINT/SIGTERM.", valueName: "seconds"))
    var gracePeriod: Double = 5

    @Flag(name: [.short, .customLong("keep-order")], help: "Write records in input order (default: as requests complete).")
    var keepOrder = false

    @Option(help: "Record format: url or jsonl.")
    var output: OutputFormatArgument = .url

    @Option(help: ArgumentHelp("Run COMMAND with each callback URL as its only argument instead of printing it.", valueName: "command"))
    var open: String?

    @Option(name: .customLong("max-line-bytes"), help: "Longest accepted request line; longer lines are InvalidURL.")
    var maxLineBytes: Int = 65_536

    @Option(name: .customLong("log-level"), help: "stderr diagnostics: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "warning"

    func validate() throws {
        if fifo != nil && socket != nil { throw ValidationError("--fifo and --socket cannot be used together") }
        if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
        if gracePeriod < 0 { throw ValidationError("--grace-period cannot be negative") }
        if restartLimit < 0 { throw ValidationError("--restart-limit cannot be negative") }
        if !(restartWindow > 0) { throw ValidationError("--restart-window must be a positive number of seconds") }
        if maxLineBytes < 16 { throw ValidationError("--max-line-bytes must be at least 16") }
        if Logger.Level(rawValue: logLevel) == nil { throw ValidationError("unknown --log-level '\(logLevel)'") }
    }

    func run() throws {
        Diagnostics.bootstrap(level: Logger.Level(rawValue: logLevel) ?? .warning)
        let logger = Diagnostics.logger
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
        configuration.gracePeriod = .milliseconds(Int64(gracePeriod * 1000))
        configuration.keepOrder = keepOrder
        configuration.output = output.value
        configuration.openCommand = open
        configuration.limits = ParseLimits(maxLineBytes: maxLineBytes)
        configuration.allowInsecurePlugins = plugins.allowInsecure
        configuration.workerExecutable = Environment.executable
        configuration.restartPolicy.limit = restartLimit
        configuration.restartPolicy.window = .milliseconds(Int64(restartWindow * 1000))

        let host = Host(configuration: configuration, logger: logger)
        do {
            try host.loadPlugins(requireDirectories: plugins.areExplicit)
        } catch {
            throw Failure.exit(error.message)
        }
        signals.start(
            onStop: { host.requestStop() },
            onReload: { host.rescan() })
        do {
            if let fifo {
                try host.serveFIFO(path: fifo, output: records)
            } else if let socket {
                try host.serveSocket(path: socket)
            } else {
                host.serve(input: 0, output: records)
            }
        } catch {
            throw Failure.exit(error.message)
        }
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

