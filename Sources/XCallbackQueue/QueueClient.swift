#if Queue  // the package's Queue trait: swift build --traits Queue
import Logging
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// The queue's operations for the command line, each on one connection:
/// `queue init`, `enqueue`, `queue status`, `outcomes`, `queue dead`,
/// `queue retry`, `queue prune`. Synchronous, for a synchronous caller.
public final class QueueClient: Sendable {
    public let location: QueueLocation
    let store: QueueStore
    let logger: Logger
    private let connection: QueueConnection
    /// How long to keep trying a database that cannot be reached yet,
    /// whenever a connection is opened; zero gives up at once.
    let waitForDatabase: Duration
    /// Ends such a wait early (SIGTERM to `outcomes --follow`).
    let stopped: @Sendable () -> Bool

    public init(location: QueueLocation, logger: Logger, waitForDatabase: Duration = .zero,
                stopped: @escaping @Sendable () -> Bool = { false }) {
        self.location = location
        self.logger = logger
        self.waitForDatabase = waitForDatabase
        self.stopped = stopped
        self.store = QueueStore(schema: location.schema, logger: logger)
        self.connection = QueueConnection(location: location, role: "client", logger: logger)
    }

    /// Runs `body` on an open connection, waiting for the database first
    /// if asked to; a failure says what and where.
    private func use<T: Sendable>(checkSchema: Bool = true,
                                  _ body: @escaping @Sendable (PostgresConnection) async throws -> T) throws(QueueError) -> T {
        do {
            return try Blocking.run { [connection, location, logger, waitForDatabase, stopped] in
                if waitForDatabase > .zero {
                    guard try await connection.open(waitingUntil: .now + waitForDatabase, stopped: stopped) else {
                        throw QueueError("stopped while waiting for the database")
                    }
                }
                return try await connection.run(timeout: .seconds(600)) { connection in
                    if checkSchema { try await QueueSchema.check(connection, location: location, logger: logger) }
                    return try await body(connection)
                }
            }
        } catch let error as QueueError {
            throw error
        } catch let failure as ConnectFailure {
            throw QueueError(failure.description, connectionLost: failure.mayPass)
        } catch {
            throw QueueError("queue at \(location): \(QueueError.describe(error))",
                             connectionLost: QueueError.isConnectionLoss(error))
        }
    }

    public func close() {
        _ = try? Blocking.run { [connection] in await connection.close() }
    }

    /// Creates or migrates the schema; returns the versions applied (none
    /// when it was up to date).
    public func initialize() throws(QueueError) -> [Int] {
        try use(checkSchema: false) { [logger, location] connection in
            try await QueueSchema.migrate(connection, schema: location.schema, logger: logger)
        }
    }

    public static var schemaVersion: Int { QueueSchema.currentVersion }

    /// Enqueues one batch; returns each line's request id.
    public func enqueue(_ lines: [EnqueueLine], maxAttempts: Int) throws(QueueError) -> [Int64] {
        try use { [store] connection in try await store.enqueue(lines, maxAttempts: maxAttempts, on: connection) }
    }

    public func status() throws(QueueError) -> QueueStatus {
        try use { [store] connection in try await store.status(on: connection) }
    }

    /// A page of outcomes after `cursor`, the horizon below which no more
    /// can appear, and whether more may follow the page; `OutcomeReader`
    /// turns pages into a stream.
    func outcomes(after cursor: OutcomeCursor, limit: Int) throws(QueueError)
        -> (outcomes: [StoredOutcome], horizon: UInt64, full: Bool) {
        try use { [store] connection in try await store.outcomes(after: cursor, limit: limit, on: connection) }
    }

    /// The cursor just before request `id`'s outcome; an error when it has none.
    public func cursor(after id: Int64) throws(QueueError) -> OutcomeCursor {
        let cursor = try use { [store] connection in try await store.cursor(before: id, on: connection) }
        guard let cursor else {
            throw QueueError("request \(id) has no recorded outcome (not finished yet, pruned, or never enqueued)")
        }
        return cursor
    }

    public func dead(limit: Int = 10_000) throws(QueueError) -> [StoredOutcome] {
        try use { [store] connection in try await store.dead(limit: limit, on: connection) }
    }

    /// Re-queues dead requests (all when `ids` is nil); returns their ids.
    public func retryDead(_ ids: [Int64]?, maxAttempts: Int) throws(QueueError) -> [Int64] {
        try use { [store] connection in try await store.retryDead(ids, maxAttempts: maxAttempts, on: connection) }
    }

    /// Deletes outcomes past `retention` in batches; `progress` hears the
    /// running total after each batch but the last.
    public func prune(retention: Duration, progress: (@Sendable (Int) -> Void)? = nil) throws(QueueError) -> Int {
        try use { [store] connection in try await store.prune(retention: retention, on: connection, progress: progress) }
    }

    /// Waits `timeout` before `outcomes --follow` looks again.
    public func pause(_ timeout: Duration) {
        var wait = timespec(tv_sec: Int(timeout.components.seconds),
                            tv_nsec: Int(timeout.components.attoseconds / 1_000_000_000))
        nanosleep(&wait, nil)
    }
}
#endif
