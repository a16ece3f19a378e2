#if Queue  // the package's Queue trait: swift build --traits Queue
import Synchronization
import Logging
import PostgresNIO

/// One connection to the queue's database that opens itself again after it
/// is lost, with back-off (`FailureStreak`: 50 ms doubling to 5 s, until a
/// statement works again). Each of a host's loops has its own, so a slow
/// claim never delays a heartbeat.
actor QueueConnection {
    let location: QueueLocation
    let role: String
    private let logger: Logger
    private var connection: PostgresConnection?
    private var failures = FailureStreak()
    private static let ids = Mutex<Int>(0)
    /// Where this connection's failures are counted (`run --metrics`); set
    /// once, before the connection is first used.
    nonisolated let failureCount = Mutex<DatabaseFailureCount?>(nil)

    /// The server's own `statement_timeout` for this connection, shorter than
    /// the client's deadline: a statement the client gave up on (a lock wait,
    /// say) must not commit later on the server.
    let serverStatementTimeout: String?
    /// Other settings of the session, sent with the startup packet.
    let settings: [(String, String)]

    init(location: QueueLocation, role: String, serverStatementTimeout: String? = nil,
         settings: [(String, String)] = [], logger: Logger) {
        self.location = location
        self.role = role
        self.serverStatementTimeout = serverStatementTimeout
        self.settings = settings
        self.logger = logger
    }

    /// The open connection, opening it if needed (once: throws a
    /// `ConnectFailure` if that fails).
    func open() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        let opened: PostgresConnection
        do {
            opened = try await Self.connect(location, role: role, statementTimeout: serverStatementTimeout,
                                            settings: settings, logger: logger)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ConnectFailure(location: location, underlying: error)
        }
        connection = opened
        return opened
    }

    /// The work this connection is for went through (a claim, a record, a
    /// heartbeat: not merely a read beside a write that fails): a run of
    /// failures is over, and said to be, at the level its first failure
    /// was logged at.
    func succeeded() {
        guard let streak = failures.succeeded() else { return }
        logger.warning("queue: \(role) connection to \(location) works again after \(streak.count) failed attempt(s) over \(streak.duration.spoken)")
    }

    /// Runs `body` on the connection, opening it again and retrying after a
    /// lost connection until `body` succeeds or the task is cancelled.
    /// `body` must be safe to run again (see `QueueError.isConnectionLoss`).
    /// With a `deadline`, no attempt and no back-off reaches past it: the
    /// last error (or a timeout) is thrown there.
    func retrying<T: Sendable>(_ what: String, until deadline: ContinuousClock.Instant? = nil,
                               _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        while true {
            try Task.checkCancellation()
            do {
                let result = try await run(until: deadline, body)
                succeeded()
                return result
            } catch {
                if Task.isCancelled { throw CancellationError() }
                if let deadline, ContinuousClock.now >= deadline { throw error }
                await failed(what, error, until: deadline)
            }
        }
    }

    /// Runs `body` on the open connection (opening it first if need be), and
    /// gives up on both after `timeout`, or at `deadline` if that comes
    /// first: the connection is then closed and forgotten, so the next call
    /// opens a new one. A connection the server ended while a statement was
    /// in flight has been seen to leave that statement unanswered for good;
    /// a half-open TCP connection does the same, and a connect to an
    /// unreachable address waits its own 10 s.
    func run<T: Sendable>(timeout: Duration = statementTimeout, until deadline: ContinuousClock.Instant? = nil,
                          _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let limit = deadline.map { min(timeout, $0 - .now) } ?? timeout
        guard limit > .zero else { throw QueueError("no time left to reach the database") }
        return try await Self.first(of: { try await body(self.open()) }, orAfter: limit) {
            .failure(QueueError("no answer from the database within \(limit)"))
        }
    }

    /// How long a statement may go unanswered before its connection is given up.
    static let statementTimeout: Duration = .seconds(5)

    /// Counts a failure (a lost connection, a failed connect, or a
    /// statement that failed on a working connection: a full disk backs
    /// off like a server that is down), closes the connection, logs the
    /// first failure of a run and then its repeats at a slowing rate, and
    /// waits out the back-off (never past `deadline`).
    func failed(_ what: String, _ error: any Error, until deadline: ContinuousClock.Instant? = nil) async {
        var delay = await note(what, error)
        if let deadline { delay = min(delay, max(.zero, deadline - .now)) }
        try? await Task.sleep(for: delay)
    }

    /// `failed` without the wait: counts, logs (the first failure only if
    /// `logFirst`), closes; returns the back-off.
    private func note(_ what: String, _ error: any Error, logFirst: Bool = true) async -> Duration {
        failureCount.withLock { $0 }?.count(error)
        let message = QueueError.describe(error)
        switch failures.failed() {
        case .first:
            if logFirst { logger.warning("queue: \(what) failed: \(message); reconnecting to \(location), with back-off") }
        case .repeated(let count, let duration):
            logger.warning("queue: \(what) still failing: \(count) failed attempt(s) over \(duration.spoken), retrying every \(FailureStreak.longestDelay.spoken) at most; the last: \(message)")
        case .quiet:
            logger.debug("queue: \(what) failed again (\(failures.count)): \(message)")
        }
        await close()
        return failures.delay
    }

    /// Opens the connection, trying again with back-off while the server
    /// is not there yet (a `ConnectFailure` that `mayPass`), until
    /// `deadline`; then, or at any other failure, throws it. Returns false,
    /// not connected, once `stopped` says so (checked every 100 ms).
    func open(waitingUntil deadline: ContinuousClock.Instant, stopped: @escaping @Sendable () -> Bool) async throws -> Bool {
        let start = ContinuousClock.now
        while true {
            if stopped() { return false }
            do {
                _ = try await open()
                succeeded()
                return true
            } catch var failure as ConnectFailure where failure.mayPass && ContinuousClock.now >= deadline && failures.count > 0 {
                failure.waited = .now - start
                throw failure
            } catch let failure as ConnectFailure where failure.mayPass && ContinuousClock.now < deadline {
                if failures.count == 0 {
                    var trying = failure
                    trying.waited = .zero
                    logger.warning("queue: waiting up to \((deadline - .now).spoken) for the database: \(trying)")
                }
                let delay = await note("connecting", failure, logFirst: false)
                let end = min(ContinuousClock.now + delay, deadline)
                while ContinuousClock.now < end && !stopped() {
                    try? await Task.sleep(for: min(.milliseconds(100), end - .now))
                }
            }
        }
    }

    /// Closes the connection; a server that does not answer the goodbye
    /// holds it up for at most `limit`.
    func close(within limit: Duration = .seconds(2)) async {
        guard let connection else { return }
        self.connection = nil
        _ = try? await Self.first(of: { try? await connection.close() }, orAfter: limit) { .success(()) }
    }

    /// `body`'s result, or `timedOut`'s once `limit` has passed first; a
    /// `body` still running then is left to finish on its own.
    private static func first<T: Sendable>(of body: @escaping @Sendable () async throws -> T, orAfter limit: Duration,
                                           _ timedOut: @escaping @Sendable () -> Result<T, any Error>) async throws -> T {
        let outcome = FirstOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.set(continuation)
            Task {
                do { outcome.resume(.success(try await body())) } catch { outcome.resume(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: limit)
                outcome.resume(timedOut())
            }
        }
    }

    /// A new connection to `location`, with TLS as its sslmode asks.
    static func connect(_ location: QueueLocation, role: String, statementTimeout: String? = nil,
                        settings: [(String, String)] = [], logger: Logger) async throws -> PostgresConnection {
        var configuration: PostgresConnection.Configuration
        if location.usesUnixSocket {
            configuration = .init(unixSocketPath: location.socketPath, username: location.user,
                                  password: location.password, database: location.database)
        } else {
            configuration = .init(host: location.host, port: location.port, username: location.user,
                                  password: location.password, database: location.database, tls: try tls(for: location))
        }
        configuration.options.connectTimeout = .seconds(10)
        // Shown in pg_stat_activity, so an operator can tell the roles apart.
        configuration.options.additionalStartupParameters = [("application_name", "xcallback \(role)")]
        if let statementTimeout {
            // Startup parameters set the session's settings, as libpq's `options` does.
            configuration.options.additionalStartupParameters += [
                ("statement_timeout", statementTimeout), ("idle_in_transaction_session_timeout", "60s"),
            ]
        }
        configuration.options.additionalStartupParameters += settings
        let id = ids.withLock { value in
            value += 1
            return value
        }
        return try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
    }

    private static func tls(for location: QueueLocation) throws -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch location.sslMode {
        case .disable:
            return .disable
        case .allow, .prefer:
            // As libpq: encrypt if the server offers it, without checking its certificate.
            tls.certificateVerification = .none
            return .prefer(try NIOSSLContext(configuration: tls))
        case .require:
            tls.certificateVerification = .none
            return .require(try NIOSSLContext(configuration: tls))
        case .verifyCA:
            tls.certificateVerification = .noHostnameVerification
            return .require(try NIOSSLContext(configuration: tls))
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            return .require(try NIOSSLContext(configuration: tls))
        }
    }
}

/// The first of two racing results wins; the other is dropped.
private final class FirstOutcome<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, done: Bool)>((nil, false))

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    func resume(_ result: Result<T, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard !state.done else { return nil }
            state.done = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}
#endif
