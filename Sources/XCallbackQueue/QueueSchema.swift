#if Queue  // the package's Queue trait: swift build --traits Queue
import Logging
import PostgresNIO

/// The queue's tables, created and migrated by `xcallback queue init`.
/// Versioned: each migration runs once, in order, in one transaction that
/// holds an advisory lock, so two hosts running `init` at once take turns
/// and the second finds nothing left to do. docs/queue.md explains every
/// table and index.
enum QueueSchema {
    /// The version this build reads and writes.
    static let currentVersion = 4

    /// Migration `n` (1-based) takes the schema from version n-1 to n.
    static func migrations(_ s: String) -> [[String]] {
        [
            [
                // Request ids: one sequence, so ids say enqueue order.
                "CREATE SEQUENCE \(s).request_ids",
                // Live hosts and their leases: a host heartbeats its own row;
                // a row past expires_at is a dead host, whose requests any host
                // returns to the queue. The id is random, never a counter: it
                // fences the host's writes, and must not come back after a
                // schema is dropped and created again.
                """
                CREATE TABLE \(s).hosts (
                    id bigint PRIMARY KEY,
                    name text NOT NULL,
                    started_at timestamptz NOT NULL DEFAULT now(),
                    expires_at timestamptz NOT NULL)
                """,
                // The claim table: only requests waiting (leased_by NULL) or
                // running (leased_by a host). A request leaves it when its
                // outcome is recorded, so it stays small.
                """
                CREATE TABLE \(s).requests (
                    id bigint PRIMARY KEY,
                    line text NOT NULL,
                    enqueued_at timestamptz NOT NULL DEFAULT now(),
                    max_attempts integer NOT NULL CHECK (max_attempts > 0),
                    attempt integer NOT NULL DEFAULT 0,
                    leased_by bigint,
                    leased_at timestamptz,
                    -- Back from a host that died holding it: it runs alone next.
                    suspect boolean NOT NULL DEFAULT false,
                    -- Leased alone (a suspect): if its host dies now, it is to blame.
                    alone boolean NOT NULL DEFAULT false,
                    -- Hosts that died running it alone; at max_attempts it is dead.
                    strikes integer NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX requests_ready ON \(s).requests (id) WHERE leased_by IS NULL AND NOT suspect",
                "CREATE INDEX requests_suspect ON \(s).requests (id) WHERE leased_by IS NULL AND suspect",
                "CREATE INDEX requests_leased ON \(s).requests (leased_by) WHERE leased_by IS NOT NULL",
                // One row per request that ended: the primary key is what makes
                // "recorded exactly once" hold whatever the hosts do.
                """
                CREATE TABLE \(s).outcomes (
                    request_id bigint PRIMARY KEY,
                    position bigint GENERATED ALWAYS AS IDENTITY,
                    recorded_by_xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
                    line text NOT NULL,
                    outcome text NOT NULL,
                    params text NOT NULL,
                    callback text,
                    attempts integer NOT NULL,
                    dead boolean NOT NULL DEFAULT false,
                    host text NOT NULL,
                    enqueued_at timestamptz NOT NULL,
                    recorded_at timestamptz NOT NULL DEFAULT now())
                """,
                // `outcomes --follow` reads in commit-safe order (see QueueStore.outcomes).
                "CREATE INDEX outcomes_order ON \(s).outcomes (recorded_by_xact, position)",
                "CREATE INDEX outcomes_recorded_at ON \(s).outcomes (recorded_at)",
                "CREATE INDEX outcomes_dead ON \(s).outcomes (request_id) WHERE dead",
                // Idempotency keys outlive the request's row in `requests`; they
                // are pruned with its outcome.
                """
                CREATE TABLE \(s).request_keys (
                    key text PRIMARY KEY,
                    request_id bigint NOT NULL)
                """,
                "CREATE INDEX request_keys_request ON \(s).request_keys (request_id)",
            ],
            // 2: what a host writes to `outcomes` goes through functions that
            // check the lease first, so a host's role needs no write on
            // `outcomes` at all (QueueGrants). Security definer, owned by the
            // role that ran `init`, with a search_path of the catalog only:
            // every name in them is qualified.
            [
                // Records outcomes and retires their requests, for the leases
                // that are still the ones given (same host, same attempt).
                """
                CREATE FUNCTION \(s).record_outcomes(int8[], int4[], int8[], text[], text[], text[], text)
                RETURNS SETOF bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
                    WITH batch AS (
                        SELECT * FROM unnest($1, $2, $3, $4, $5, $6) AS b(id, attempt, host, outcome, params, callback)),
                    done AS (
                        DELETE FROM \(s).requests r USING batch b
                        WHERE r.id = b.id AND r.attempt = b.attempt AND r.leased_by = b.host
                        RETURNING r.id, r.line, r.attempt, r.enqueued_at)
                    INSERT INTO \(s).outcomes (request_id, line, attempts, enqueued_at, outcome, params, callback, host)
                    SELECT d.id, d.line, d.attempt, d.enqueued_at, b.outcome, b.params, NULLIF(b.callback, ''), $7
                    FROM done d JOIN batch b ON b.id = d.id
                    ON CONFLICT (request_id) DO NOTHING
                    RETURNING request_id
                $$
                """,
                // Retires requests out of strikes (their host gone, `max_attempts`
                // hosts lost running them alone) with the dead outcome the
                // rescuing host wrote; any other request is left alone.
                """
                CREATE FUNCTION \(s).record_dead(int8[], text[], text[], text[], text)
                RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
                    WITH batch AS (
                        SELECT * FROM unnest($1, $2, $3, $4) AS b(id, outcome, params, callback)),
                    gone AS (
                        DELETE FROM \(s).requests r USING batch b
                        WHERE r.id = b.id AND r.leased_by IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM \(s).hosts h WHERE h.id = r.leased_by)
                          AND r.strikes + r.alone::int >= r.max_attempts
                        RETURNING r.id, r.line, r.attempt, r.enqueued_at),
                    recorded AS (
                        INSERT INTO \(s).outcomes
                            (request_id, line, attempts, enqueued_at, outcome, params, callback, host, dead)
                        SELECT g.id, g.line, g.attempt, g.enqueued_at, b.outcome, b.params, NULLIF(b.callback, ''), $5, true
                        FROM gone g JOIN batch b ON b.id = g.id
                        ON CONFLICT (request_id) DO NOTHING
                        RETURNING 1)
                    SELECT count(*)::integer FROM recorded
                $$
                """,
                // Functions are everyone's to call unless revoked.
                "REVOKE EXECUTE ON FUNCTION \(s).record_outcomes(int8[], int4[], int8[], text[], text[], text[], text) FROM PUBLIC",
                "REVOKE EXECUTE ON FUNCTION \(s).record_dead(int8[], text[], text[], text[], text) FROM PUBLIC",
            ],
            // 3: `record_outcomes` finds each request by its primary key,
            // whatever the statistics say. A function's statement is planned
            // without its arguments, each batch estimated at 10 rows; once
            // `requests` was analyzed with few rows leased, the planner
            // preferred `requests_leased` for `leased_by = host` and, for
            // each outcome, walked every entry of the host's in it, dead
            // ones included: 35 ms for a batch of 256, against 2 ms. `+ 0`
            // takes that index out of the running; the condition is the same.
            // (CREATE OR REPLACE keeps the owner and the grants.)
            [
                """
                CREATE OR REPLACE FUNCTION \(s).record_outcomes(int8[], int4[], int8[], text[], text[], text[], text)
                RETURNS SETOF bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
                    WITH batch AS (
                        SELECT * FROM unnest($1, $2, $3, $4, $5, $6) AS b(id, attempt, host, outcome, params, callback)),
                    done AS (
                        DELETE FROM \(s).requests r USING batch b
                        WHERE r.id = b.id AND r.attempt = b.attempt AND r.leased_by + 0 = b.host
                        RETURNING r.id, r.line, r.attempt, r.enqueued_at)
                    INSERT INTO \(s).outcomes (request_id, line, attempts, enqueued_at, outcome, params, callback, host)
                    SELECT d.id, d.line, d.attempt, d.enqueued_at, b.outcome, b.params, NULLIF(b.callback, ''), $7
                    FROM done d JOIN batch b ON b.id = d.id
                    ON CONFLICT (request_id) DO NOTHING
                    RETURNING request_id
                $$
                """,
            ],
            // 4: hosts and enqueuers write only through functions (QueueFunctions).
            functions(s),
        ]
    }

    /// Creates or migrates the schema; returns the versions it applied.
    static func migrate(_ connection: PostgresConnection, schema s: String, logger: Logger) async throws -> [Int] {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(s + ".schema")))", logger: logger)
            try await connection.query("CREATE SCHEMA IF NOT EXISTS \(unescaped: s)", logger: logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS \(unescaped: s).schema_migrations (
                    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            let version = try await currentVersion(connection, schema: s, logger: logger) ?? 0
            if version > currentVersion {
                throw QueueError("the queue's schema is at version \(version), newer than this xcallback knows (\(currentVersion)); upgrade xcallback")
            }
            var applied: [Int] = []
            for (index, statements) in migrations(s).enumerated() where index + 1 > version {
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO \(unescaped: s).schema_migrations (version) VALUES (\(index + 1))",
                                           logger: logger)
                applied.append(index + 1)
            }
            return applied
        }
    }

    /// The schema's version, or nil when it was never created.
    static func currentVersion(_ connection: PostgresConnection, schema s: String, logger: Logger) async throws -> Int? {
        let exists = try await connection.query(
            "SELECT to_regclass(\(s + ".schema_migrations")) IS NOT NULL", logger: logger)
        for try await (present) in exists.decode(Bool.self) where !present { return nil }
        let rows = try await connection.query(
            "SELECT coalesce(max(version), 0) FROM \(unescaped: s).schema_migrations", logger: logger)
        for try await version in rows.decode(Int.self) { return version }
        return 0
    }

    /// Fails with what to do when the schema is missing or of another version.
    static func check(_ connection: PostgresConnection, location: QueueLocation, logger: Logger) async throws {
        switch try await currentVersion(connection, schema: location.schema, logger: logger) {
        case nil, 0?:
            throw QueueError("\(location) has no xcallback queue yet; create it with: xcallback queue init '\(location)'")
        case let version? where version < currentVersion:
            throw QueueError("the queue's schema is at version \(version) and this xcallback needs \(currentVersion); migrate it with: xcallback queue init '\(location)'")
        case let version? where version > currentVersion:
            throw QueueError("the queue's schema is at version \(version), newer than this xcallback knows (\(currentVersion)); upgrade xcallback")
        default:
            return
        }
    }
}
#endif
