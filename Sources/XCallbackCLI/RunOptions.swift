import ArgumentParser
import Logging

/// `run`'s options, grouped for `run --help` (ArgumentParser titles a group
/// of options only as a `ParsableArguments` of its own). `RunCommand` reads
/// them under their old names (the extension at the end).

/// Where requests come from.
struct RunInputOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("Read requests from each FILE in turn, to its end ('-' is stdin). None: stdin.", valueName: "file"), completion: .file())
    var files: [String] = []

    @Option(help: ArgumentHelp("Read requests from this FIFO (created mode 0600 if missing) until SIGINT/SIGTERM.", valueName: "path"), completion: .file())
    var fifo: String?

    @Option(help: ArgumentHelp("Serve requests on this Unix stream socket until SIGINT/SIGTERM (with --fifo: both). Under systemd socket activation, the socket systemd passes is served instead.", valueName: "path"), completion: .file())
    var socket: String?
}

/// Consuming the durable queue instead of an input stream.
package struct RunQueueOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Consume this durable queue (a postgresql:// URL; see `xcallback queue`) instead of reading stdin; records are written once recorded.", valueName: "url"))
    var queue: String?

    @Option(help: ArgumentHelp("With --queue: seconds a host's lease on its requests lasts without a heartbeat (it heartbeats three times per lease).", valueName: "seconds"))
    var lease: Double = 15

    @Option(name: .customLong("batch-size"), help: "With --queue: requests claimed at once.")
    var batchSize: Int = 256

    @Option(help: ArgumentHelp("With --queue: seconds outcomes are kept before hosts prune them.", valueName: "seconds"))
    var retention: Double = defaultRetention

    @Option(name: .customLong("database-stop-timeout"),
            help: ArgumentHelp("With --queue: at a stop, seconds (after the grace period) the host keeps trying to record outcomes and leave the queue when the database does not answer; then it gives up, saying on what, and exits.", valueName: "seconds"))
    var databaseStopTimeout: Double = 30

    @Option(name: .customLong("wait-for-database"),
            help: ArgumentHelp("With --queue: at start, keep trying (with back-off) a database that cannot be reached yet for up to this many seconds before giving up (default 0: at once).", valueName: "seconds"))
    var waitForDatabase: Double = 0

    package static let defaultRetention: Double = 7 * 86_400

    package init() {}

    package func validate() throws {
        if !(lease >= 1) { throw ValidationError("--lease must be at least 1 second") }
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
        if !(retention > 0) { throw ValidationError("--retention must be a positive number of seconds") }
        if !(databaseStopTimeout >= 0) { throw ValidationError("--database-stop-timeout must be a number of seconds, 0 or more") }
        if !(waitForDatabase >= 0) { throw ValidationError("--wait-for-database must be a number of seconds, 0 or more") }
    }
}

/// How plug-ins run, and what happens when one crashes.
struct RunPluginOptions: ParsableArguments {
    @Option(help: "How plug-ins run: process (each in its own worker process) or none (inside the host: fastest, but a plug-in crash kills the host).")
    var isolation: IsolationArgument = .process

    @Option(name: .customLong("restart-limit"), help: "Crashes of one plug-in tolerated within --restart-window before it is disabled.")
    var restartLimit: Int = 5

    @Option(name: .customLong("restart-window"), help: ArgumentHelp("The window, in seconds, for --restart-limit.", valueName: "seconds"))
    var restartWindow: Double = 60

    @Option(name: .customLong("quarantine"), help: ArgumentHelp("Seconds a plug-in past --restart-limit stays disabled before it is tried again; doubles each time in a row, up to 600.", valueName: "seconds"))
    var quarantine: Double = 30
}

/// Deadlines and sizes.
struct RunLimitOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Seconds a request may take before it is answered Timeout.", valueName: "seconds"))
    var timeout: Double = 30

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp("Seconds a socket connection may go without sending a complete request line, with none in flight, before it is closed; and the seconds its client may take to read the records written to it before it is dropped.", valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(name: .customLong("grace-period"), help: ArgumentHelp("Seconds in-flight requests may finish after SIGINT/SIGTERM.", valueName: "seconds"))
    var gracePeriod: Double = 5

    @Option(name: .customLong("max-line-bytes"), help: "Longest accepted request line; longer lines are InvalidURL.")
    var maxLineBytes: Int = 65_536
}

/// What is written where.
struct RunOutputOptions: ParsableArguments {
    @Option(help: "Record format: url or jsonl.")
    var output: OutputFormatArgument = .url

    @Flag(name: [.short, .customLong("keep-order")], help: "Write records in input order (default: as requests complete); with FILEs, in the order of each file.")
    var keepOrder = false

    @Option(help: ArgumentHelp("Run COMMAND with each callback URL as its only argument instead of printing it (a program on PATH, or a path; checked at start).", valueName: "command"), completion: .default)
    var open: String?

    @Option(name: .customLong("open-scheme"), help: ArgumentHelp("Let --open open callbacks of SCHEME, one it refuses by default (file, javascript, data and others that act on this machine; see docs/usage.md). Repeatable.", valueName: "scheme"))
    var openSchemes: [String] = []
}

/// stderr.
struct RunDiagnosticOptions: ParsableArguments {
    @Option(name: .customLong("log-level"), help: "stderr diagnostics: trace, debug, info, notice, warning, error, critical.",
            completion: .list(Logger.Level.allCases.map(\.rawValue)))
    var logLevel: String = "warning"

    @Option(name: .customLong("log-format"), help: "stderr diagnostics format: text, or json (one object per line).")
    var logFormat: LogFormatArgument = .text

    @Flag(name: .customLong("no-summary"), help: "No outcome summary line on stderr at exit (SIGUSR1 still prints one).")
    var noSummary = false

    @Flag(name: .customLong("no-progress"), help: "No progress line, even when reading a file with stderr on a terminal.")
    var noProgress = false

    @Option(name: .customLong("metrics"),
            help: ArgumentHelp("Serve Prometheus metrics at /metrics on ADDRESS: HOST:PORT (127.0.0.1:9464) or a Unix socket path (off by default; docs/observability.md).", valueName: "address"))
    var metrics: String?
}

extension RunCommand {
    static var discussion: String {
        """
        Reads request URLs, one per line: from each FILE in turn ('-' is stdin), or from stdin \
        when no FILE is given, to the end of input; or from --fifo and/or --socket until \
        SIGINT/SIGTERM; or from a --queue. Writes one outcome record per request to stdout \
        (--output url or jsonl), in completion order unless --keep-order; a socket connection \
        gets its own records; with --open, callback URLs go to COMMAND instead. Log lines, the \
        summary line and whatever a plug-in prints go to stderr, never to stdout.

        Examples:
          xcallback run --plugins ./plugins < requests.txt
          xcallback run -k --output jsonl a.txt - b.txt < more.txt | jq -c .params
          xcallback run --fifo "$XDG_RUNTIME_DIR/xcallback-$(id -u).fifo" --open xdg-open
          xcallback run --socket "$XDG_RUNTIME_DIR/xcallback-$(id -u).sock" --log-level info

        Exit status:
          0    input read to its end and answered (whatever the outcomes),
               a stop by SIGTERM, or stdout closed by its reader
          1    the host could not start or read its input: an unusable
               --plugins folder, a FILE it cannot read, an --open COMMAND
               not found, --sandbox strict on a kernel that lacks it, ...
          64   a usage error: an unknown option, an invalid value, FILE
               with --fifo, --socket or --queue
          130  stopped by SIGINT (Ctrl-C); a second SIGINT or SIGTERM
               exits at once, also with 130

        Signals:
          SIGINT, SIGTERM  stop reading; requests in flight get
                           --grace-period, then Timeout; lines already
                           waiting (pipe, FIFO, socket) are answered
                           ShuttingDown, not run
          SIGHUP           load plug-in files added or changed since the
                           last scan
          SIGUSR1          print the summary line so far
          SIGSEGV, SIGABRT, ... (a crash, an in-process plug-in's too):
                           one line naming it, then death by the signal;
                           SWIFT_BACKTRACE=enable=yes adds a backtrace
        """
    }

    var files: [String] { input.files }
    var fifo: String? { input.fifo }
    var queue: String? { queueOptions.queue }
    package var lease: Double { queueOptions.lease }
    package var batchSize: Int { queueOptions.batchSize }
    package var retention: Double { queueOptions.retention }
    package var databaseStopTimeout: Double { queueOptions.databaseStopTimeout }
    package var waitForDatabase: Double { queueOptions.waitForDatabase }
    var socket: String? { input.socket }
    var isolation: IsolationArgument { workers.isolation }
    var restartLimit: Int { workers.restartLimit }
    var restartWindow: Double { workers.restartWindow }
    var quarantine: Double { workers.quarantine }
    var timeout: Double { limits.timeout }
    var idleTimeout: Double { limits.idleTimeout }
    var gracePeriod: Double { limits.gracePeriod }
    var maxLineBytes: Int { limits.maxLineBytes }
    package var output: OutputFormatArgument { records.output }
    var keepOrder: Bool { records.keepOrder }
    var open: String? { records.open }
    var openSchemes: [String] { records.openSchemes }
    var logLevel: String { diagnostics.logLevel }
    var logFormat: LogFormatArgument { diagnostics.logFormat }
    package var noSummary: Bool { diagnostics.noSummary }
    var noProgress: Bool { diagnostics.noProgress }
    var metrics: String? { diagnostics.metrics }
}
