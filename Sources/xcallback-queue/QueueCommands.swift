#if Queue  // the package's Queue trait: swift build --traits Queue
import ArgumentParser
import Synchronization
import Foundation
import Logging
import XCallbackCLI
import XCallbackHost
import XCallbackQueue
import XCallbackSystem
import XCallbackURL

/// `xcallback queue …`: the durable queue on PostgreSQL (docs/queue.md).
struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Create, inspect and tend a durable request queue on PostgreSQL that many hosts share.",
        discussion: """
            QUEUE is a postgresql:// URL as libpq reads it (postgresql:///DB for a local database over \
            its Unix socket); PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE and \
            PGPASSFILE (or ~/.pgpass) fill in what it leaves out. Feed it with `xcallback enqueue`, \
            consume it with `xcallback run --queue`, read outcomes with `xcallback outcomes`.
            """,
        subcommands: [QueueInitCommand.self, QueueStatusCommand.self, QueueDeadCommand.self,
                      QueueRetryCommand.self, QueuePruneCommand.self, QueueURLCommand.self])
}

/// The queue argument and options every `queue` subcommand shares.
struct QueueOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("The queue's database: a postgresql:// URL (empty: PG* variables and defaults).", valueName: "queue"))
    var queue: String

    @OptionGroup var connecting: QueueConnectOptions

    func client() throws -> QueueClient { try connecting.client(queue) }
}

/// How every queue command connects and logs: `queue …`, `enqueue`, `outcomes`.
struct QueueConnectOptions: ParsableArguments {
    @Option(name: .customLong("log-level"), help: "stderr diagnostics: trace, debug, info, notice, warning, error, critical.",
            completion: .list(Logger.Level.allCases.map(\.rawValue)))
    var logLevel: String = "warning"

    @Option(name: .customLong("wait-for-database"),
            help: ArgumentHelp("Keep trying, with back-off, a database that cannot be reached yet for up to this many seconds before giving up (default 0: at once).", valueName: "seconds"))
    var waitForDatabase: Double = 0

    func validate() throws {
        if Logger.Level(rawValue: logLevel) == nil {
            let levels = Logger.Level.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            throw ValidationError("The value '\(logLevel)' is invalid for '--log-level <log-level>'. Please provide one of \(levels).")
        }
        if !(waitForDatabase >= 0) { throw ValidationError("--wait-for-database must be a number of seconds, 0 or more") }
    }

    /// Sets up stderr diagnostics and a client of `queue`; `stopped` ends a wait for the database.
    func client(_ queue: String, stopped: @escaping @Sendable () -> Bool = { false }) throws -> QueueClient {
        Diagnostics.bootstrap(level: Logger.Level(rawValue: logLevel) ?? .warning)
        do {
            return QueueClient(location: try QueueLocation(parsing: queue), logger: Diagnostics.logger,
                               waitForDatabase: .milliseconds(Int64(waitForDatabase * 1000)), stopped: stopped)
        } catch {
            throw Failure.exit(error.message)
        }
    }
}

/// Runs a queue operation; its error is one line on stderr and exit 1.
func queueOperation<T>(_ body: () throws(QueueError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw Failure.exit(error.message)
    }
}

struct QueueInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the queue's tables, or migrate them to this version (safe to run again, and from two hosts at once).")

    @OptionGroup var options: QueueOptions

    @Flag(help: ArgumentHelp(
        "Print, instead, the SQL that creates roles for hosts, enqueuers and readers with only what each needs; run it as the owner.",
        discussion: "The roles are DATABASE.SCHEMA.host, DATABASE.SCHEMA.enqueue and DATABASE.SCHEMA.reader (\"jobs.xcallback.host\" … for a queue in database jobs); see docs/queue.md."))
    var printGrants = false

    func run() throws {
        if printGrants {
            do {
                print(try QueueGrants.sql(for: try QueueLocation(parsing: options.queue)), terminator: "")
            } catch {
                throw Failure.exit(error.message)
            }
            return
        }
        let client = try options.client()
        defer { client.close() }
        let applied = try queueOperation { () throws(QueueError) in try client.initialize() }
        if applied.isEmpty {
            print("queue at \(client.location) is up to date (schema version \(QueueClient.schemaVersion))")
        } else {
            print("queue at \(client.location) is at schema version \(applied.last!) (applied \(applied.map(String.init).joined(separator: ", ")))")
        }
    }
}

struct QueueStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show how many requests are ready, leased, done and dead, and how long the oldest ready one has waited.")

    @OptionGroup var options: QueueOptions

    @Flag(help: "One JSON object instead of text.")
    var json = false

    func run() throws {
        let client = try options.client()
        defer { client.close() }
        let status = try queueOperation { () throws(QueueError) in try client.status() }
        let age = (status.oldestReadySeconds * 1000).rounded() / 1000
        if json {
            // No ready request, no age: null, as the text's "-".
            let oldest = status.ready == 0 ? "null" : "\(age)"
            print(#"{"ready":\#(status.ready),"leased":\#(status.leased),"done":\#(status.done),"dead":\#(status.dead),"oldest_ready_seconds":\#(oldest),"hosts":\#(status.hosts)}"#)
        } else {
            print("ready   \(status.ready)")
            print("leased  \(status.leased)")
            print("done    \(status.done)")
            print("dead    \(status.dead)")
            print("oldest ready  \(status.ready == 0 ? "-" : "\(age) s")")
            print("hosts   \(status.hosts)")
        }
    }
}

struct QueueDeadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead",
        abstract: "List dead requests (no outcome after their attempts): id, attempts and the request line, tab-separated.")

    @OptionGroup var options: QueueOptions

    func run() throws {
        let client = try options.client()
        defer { client.close() }
        let dead = try queueOperation { () throws(QueueError) in try client.dead() }
        for outcome in dead { print("\(outcome.requestID)\t\(outcome.attempts)\t\(outcome.line)") }
    }
}

struct QueueRetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Put dead requests back in the queue with no strikes (each runs alone first); prints each id re-queued.")

    @OptionGroup var options: QueueOptions

    @Argument(help: ArgumentHelp("Request ids to re-queue.", valueName: "id"))
    var ids: [Int64] = []

    @Flag(help: "Re-queue every dead request.")
    var all = false

    @Option(name: .customLong("max-attempts"), help: "Hosts each re-queued request may take down, running alone, before it is dead again.")
    var maxAttempts: Int = EnqueueCommand.defaultMaxAttempts

    func validate() throws {
        if ids.isEmpty == !all { throw ValidationError("give request ids, or --all") }
        if maxAttempts < 1 { throw ValidationError("--max-attempts must be at least 1") }
    }

    func run() throws {
        let client = try options.client()
        defer { client.close() }
        let revived = try queueOperation { () throws(QueueError) in try client.retryDead(all ? nil : ids, maxAttempts: maxAttempts) }
        for id in revived { print(id) }
        let missing = Set(ids).subtracting(revived)
        if !missing.isEmpty {
            throw Failure.exit("not dead, so not re-queued: \(missing.sorted().map(String.init).joined(separator: ", "))")
        }
    }
}

struct QueueURLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "url",
        abstract: "Print the queue's connection as a URL, never with its password; with --psql, one that psql accepts.",
        discussion: """
            The URL is read as every queue command reads it (PG* variables and defaults fill in what it \
            leaves out) and printed in full. psql refuses the schema option of a queue URL: \
            psql -v ON_ERROR_STOP=1 "$(xcallback queue url "$QUEUE" --psql)" connects to the queue's \
            database, its password taken from PGPASSWORD or ~/.pgpass.
            """)

    @Argument(help: ArgumentHelp("The queue's database: a postgresql:// URL (empty: PG* variables and defaults).", valueName: "queue"))
    var queue: String

    @Flag(help: "A URL for psql and libpq: without the schema option.")
    var psql = false

    func run() throws {
        let location = try queueOperation { () throws(QueueError) in try QueueLocation(parsing: queue) }
        print(psql ? location.libpqURL : location.description)
    }
}

struct QueuePruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete outcomes (and their idempotency keys) recorded longer ago than --retention; hosts also do this every minute.")

    @OptionGroup var options: QueueOptions

    @Option(help: ArgumentHelp("Keep outcomes this many seconds.", valueName: "seconds"))
    var retention: Double = RunQueueOptions.defaultRetention

    func run() throws {
        let client = try options.client()
        defer { client.close() }
        let progress = PruneProgress(terminal: isatty(2) != 0)
        let pruned = try queueOperation { () throws(QueueError) in
            try client.prune(retention: .milliseconds(Int64(retention * 1000))) { progress.deleted($0) }
        }
        progress.end()
        print("pruned \(pruned) outcome(s)")
    }
}

/// `xcallback enqueue --queue URL [FILE…]`.
struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Add request URLs to a queue; prints one request id per accepted line.",
        discussion: """
            Reads one request per line from the files, or stdin (-), as `run` does: blank lines and \
            lines starting with # are skipped. A line KEY<TAB>URL carries an idempotency key: a line \
            whose key was enqueued before is not added again, and prints the first one's id. An \
            invalid line is reported on stderr with its line number and skipped; the lines around it \
            are kept, and the exit status is 1.
            """)

    static let defaultMaxAttempts = 3
    static let batchSize = 1_000

    @Option(help: ArgumentHelp("The queue's database: a postgresql:// URL.", valueName: "url"))
    var queue: String

    @Option(name: .customLong("max-attempts"), help: "Hosts a request may take down while it runs alone (once a host died holding it beside others) before it is dead.")
    var maxAttempts: Int = defaultMaxAttempts

    @Option(name: .customLong("max-line-bytes"), help: "Longest accepted request line.")
    var maxLineBytes: Int = 65_536

    @Argument(help: ArgumentHelp("Files of request lines (default: stdin; - is stdin).", valueName: "file"))
    var files: [String] = []

    @OptionGroup var connecting: QueueConnectOptions

    func validate() throws {
        if maxAttempts < 1 { throw ValidationError("--max-attempts must be at least 1") }
        if !(16...EnqueueLine.maxLineBytes).contains(maxLineBytes) {
            throw ValidationError("--max-line-bytes must be from 16 to \(EnqueueLine.maxLineBytes) (the queue's own limit)")
        }
    }

    func run() throws {
        let client = try connecting.client(queue)
        defer { client.close() }
        let limits = ParseLimits(maxLineBytes: maxLineBytes)
        var rejected = 0
        var batch: [EnqueueLine] = []
        func flush() throws {
            guard !batch.isEmpty else { return }
            let ids = try queueOperation { () throws(QueueError) in try client.enqueue(batch, maxAttempts: maxAttempts) }
            var out = ""
            for id in ids { out += "\(id)\n" }
            FileHandle.standardOutput.write(Data(out.utf8))
            batch.removeAll(keepingCapacity: true)
        }
        var flushError: (any Error)?
        for file in files.isEmpty ? ["-"] : files {
            let name = file == "-" ? "stdin" : file
            let descriptor = file == "-" ? 0 : open(file, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw Failure.exit("cannot read \(file): \(String(cString: strerror(errno)))")
            }
            defer { if descriptor != 0 { close(descriptor) } }
            var number = 0
            let lines = LineSplitter(descriptor) {
                do { try flush() } catch { flushError = error }
            }
            for raw in lines {
                if let flushError { throw flushError }
                number += 1
                let text = Self.trimmed(raw)
                if text.isEmpty || text.first == UInt8(ascii: "#") { continue }
                do throws(EnqueueLineError) {
                    batch.append(try Self.parse(text, limits: limits))
                } catch {
                    rejected += 1
                    Diagnostics.console.write("xcallback: enqueue: \(name):\(number): \(error.message); line skipped\n")
                    continue
                }
                if batch.count >= Self.batchSize { try flush() }
            }
            if let flushError { throw flushError }
        }
        try flush()
        if rejected > 0 {
            throw Failure.exit("enqueue: \(rejected) invalid line(s) skipped; the others were enqueued")
        }
    }

    struct EnqueueLineError: Error { let message: String }

    /// The longest idempotency key, in bytes.
    static let maxKeyBytes = EnqueueLine.maxKeyBytes

    /// A line without leading and trailing spaces and tabs, as `run` trims it.
    static func trimmed(_ line: [UInt8]) -> ArraySlice<UInt8> {
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
        guard let first = line.firstIndex(where: { !blank($0) }), let last = line.lastIndex(where: { !blank($0) }) else {
            return []
        }
        return line[first...last]
    }

    /// `URL` or `KEY<TAB>URL`, checked as the host will parse it: valid
    /// UTF-8 and a URL `run` accepts; a key of printable text.
    static func parse(_ text: ArraySlice<UInt8>, limits: ParseLimits) throws(EnqueueLineError) -> EnqueueLine {
        var key: String?
        var urlBytes = text
        if let tab = text.firstIndex(of: UInt8(ascii: "\t")) {
            let keyBytes = text[..<tab]
            urlBytes = trimmed(Array(text[(tab + 1)...]))
            if keyBytes.isEmpty { throw EnqueueLineError(message: "empty idempotency key before the tab") }
            if keyBytes.count > maxKeyBytes {
                throw EnqueueLineError(message: "idempotency key is longer than \(maxKeyBytes) bytes")
            }
            if keyBytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
                throw EnqueueLineError(message: "idempotency key holds a control character")
            }
            guard let valid = String(validating: keyBytes, as: UTF8.self) else {
                throw EnqueueLineError(message: "idempotency key is not valid UTF-8")
            }
            key = valid
        }
        if urlBytes.count > limits.maxLineBytes {
            throw EnqueueLineError(message: "line is longer than the limit of \(limits.maxLineBytes) bytes")
        }
        let bytes = Array(urlBytes)
        do {
            _ = try bytes.withUnsafeBufferPointer { buffer throws(URLParseError) in try RequestURL(parsing: buffer, limits: limits) }
        } catch {
            throw EnqueueLineError(message: "invalid URL: \(error.message)")
        }
        // RequestURL accepted it, so it is valid UTF-8.
        return EnqueueLine(url: String(decoding: bytes, as: UTF8.self), key: key)
    }
}

/// Lines of a file, read in blocks; LF or CRLF. `beforeBlocking` runs
/// when every line read so far has been handed out and the next read may
/// wait: a batch then goes out at once instead of waiting to fill (a slow
/// producer piping into `enqueue` is not held back).
struct LineSplitter: Sequence, IteratorProtocol {
    let descriptor: Int32
    let beforeBlocking: () -> Void
    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false

    init(_ descriptor: Int32, beforeBlocking: @escaping () -> Void) {
        self.descriptor = descriptor
        self.beforeBlocking = beforeBlocking
    }

    mutating func next() -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = Array(buffer[start..<end])
                start = newline + 1
                return line
            }
            if ended {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return line
            }
            buffer.removeFirst(start)
            start = 0
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 0) == 0 { beforeBlocking() }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { ended = true } else { buffer.append(contentsOf: chunk[0..<count]) }
        }
    }
}

/// `xcallback outcomes --queue URL [--follow] [--after ID]`.
struct OutcomesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcomes",
        abstract: "Print a queue's recorded outcomes, in the record formats of `run`.",
        discussion: """
            Records come in the order they were recorded. With --after ID, only those recorded after \
            request ID's; with --follow, new ones as they are recorded, until SIGINT or SIGTERM. A follower \
            prints an outcome once no transaction that could come before it is still running, so \
            --after the last ID it printed takes over from it with no outcome skipped or repeated.
            """)

    @Option(help: ArgumentHelp("The queue's database: a postgresql:// URL.", valueName: "url"))
    var queue: String

    @Option(name: [.customLong("after"), .customLong("since")],
            help: ArgumentHelp("Only outcomes recorded after request ID's outcome (--since is the same).", valueName: "id"))
    var after: Int64?

    @Flag(name: [.short, .long], help: "Keep printing outcomes as they are recorded.")
    var follow = false

    @Option(help: "Record format: url or jsonl.")
    var output: OutputFormatArgument = .url

    @OptionGroup var connecting: QueueConnectOptions

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        // Following ends on SIGINT or SIGTERM as `run` does: a requested
        // stop, so exit 0 after SIGTERM (130 after SIGINT), not death by it.
        let stopped = Atomic<Bool>(false)
        if follow {
            SignalWaiter.blockHostSignals().start(
                onStop: { stopped.store(true, ordering: .releasing) }, onReload: {}, onReport: {})
        }
        let client = try connecting.client(queue) { stopped.load(ordering: .acquiring) }
        defer { client.close() }
        var cursor = OutcomeCursor.start
        if let after {
            do {
                cursor = try client.cursor(after: after)
            } catch {
                if stopped.load(ordering: .acquiring) { return }
                throw Failure.exit(error.message)
            }
        }
        let format = output.value
        var reader = OutcomeReader(client: client, after: cursor)
        var readerGone = false
        // Since when the connection has been lost, while following.
        var lostSince: ContinuousClock.Instant?
        while true {
            do {
                let write = { (page: [StoredOutcome]) throws in
                    var bytes: [UInt8] = []
                    for outcome in page { Self.write(outcome, as: format, to: &bytes) }
                    if !RecordWrite.all(1, bytes) { throw ReaderGone() }
                }
                // Following, only what is safe to give (OutcomeReader); a
                // listing, everything committed.
                if follow { try reader.pass(write) } else { try reader.all(write) }
                lostSince = nil
            } catch is ReaderGone {
                readerGone = true
            } catch let error as QueueError
                        where follow && error.connectionLost && connecting.waitForDatabase > 0 && !stopped.load(ordering: .acquiring) {
                // A restart or a terminated backend: the reader keeps its
                // place, so reading on after reconnecting neither skips nor
                // repeats an outcome. Given up after --wait-for-database.
                let now = ContinuousClock.now
                if lostSince == nil {
                    lostSince = now
                    Diagnostics.console.write("xcallback: outcomes: \(error.message); reconnecting for up to \(String(format: "%g", connecting.waitForDatabase)) s (--wait-for-database)\n")
                }
                if let lostSince, now - lostSince >= .milliseconds(Int64(connecting.waitForDatabase * 1000)) {
                    throw Failure.exit(error.message)
                }
                client.pause(.milliseconds(200))
                continue
            } catch let error as QueueError {
                // A stop while waiting for the database is a stop, not a failure.
                if stopped.load(ordering: .acquiring) { return }
                throw Failure.exit(error.message)
            }
            if readerGone || !follow { return }  // a closed stdout ends it quietly
            // Idle, it writes nothing, so a reader that left (`| head -5`)
            // is seen here, not only at the next write.
            for _ in 0..<5 where !stopped.load(ordering: .acquiring) && !Self.outputClosed() {
                client.pause(.milliseconds(100))
            }
            if stopped.load(ordering: .acquiring) || Self.outputClosed() { return }
        }
    }

    private struct ReaderGone: Error {}

    /// `run`'s record; in jsonl led by the request's `id`, the one
    /// `--after` takes (a callback URL has no room for it).
    static func write(_ outcome: StoredOutcome, as format: OutputFormat, to bytes: inout [UInt8]) {
        guard format == .jsonl else { return format.write(outcome.record, to: &bytes) }
        var record: [UInt8] = []
        format.write(outcome.record, to: &record)
        bytes.append(contentsOf: #"{"id":\#(outcome.requestID),"#.utf8)
        bytes.append(contentsOf: record.dropFirst())  // its own "{"
    }

    /// Whether stdout's reader has gone without a write to find it out: a
    /// pipe whose read end is closed polls as POLLERR, a socket shut down
    /// as POLLHUP. A file or a terminal never does.
    static func outputClosed() -> Bool {
        var entry = pollfd(fd: 1, events: 0, revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLERR | POLLHUP) != 0
    }
}

/// What `queue prune` says while it works, on stderr: on a terminal, a
/// running count on the status line, rewritten after each batch; elsewhere
/// (a log, a cron mail), a line every 10 s once it has taken that long, so
/// a quick prune stays silent.
final class PruneProgress: Sendable {
    let terminal: Bool
    private let last = Mutex<ContinuousClock.Instant>(.now)
    static let interval: Duration = .seconds(10)

    init(terminal: Bool) { self.terminal = terminal }

    func deleted(_ total: Int) {
        if terminal {
            Diagnostics.console.showStatus("queue prune: \(total) outcome(s) deleted so far…")
            return
        }
        let now = ContinuousClock.now
        let due = last.withLock { last -> Bool in
            guard now - last >= Self.interval else { return false }
            last = now
            return true
        }
        if due { Diagnostics.console.write("xcallback: queue prune: \(total) outcome(s) deleted so far\n") }
    }

    func end() {
        if terminal { Diagnostics.console.clearStatus() }
    }
}
#endif
