import Foundation
import Logging
import PostgresNIO
import XCallbackURL

/// Every statement the queue runs, each a short transaction (docs/queue.md
/// gives the rules they keep). `s` is the schema, checked to be a plain
/// identifier by `QueueLocation`.
struct QueueStore: Sendable {
    let schema: String
    let logger: Logger

    private var s: String { schema }
    /// The channel `enqueue` notifies and hosts listen on.
    var channel: String { "\(schema)_requests" }

    // MARK: enqueue

    /// Inserts a batch; returns each line's request id, in order. A line
    /// whose key was seen before gets that request's id and is not inserted.
    func enqueue(_ lines: [EnqueueLine], maxAttempts: Int, on connection: PostgresConnection) async throws -> [Int64] {
        try await connection.withTransaction(logger: logger) { connection in
            var ids = [Int64](repeating: 0, count: lines.count)
            var newIDs: [Int64] = []
            var newLines: [String] = []
            // Keys first: each distinct key takes an id once, ever.
            var firstIndexOfKey: [String: Int] = [:]
            for (index, line) in lines.enumerated() {
                if let key = line.key, firstIndexOfKey[key] == nil { firstIndexOfKey[key] = index }
            }
            if !firstIndexOfKey.isEmpty {
                let keys = Array(firstIndexOfKey.keys)
                var taken: [String: Int64] = [:]
                let inserted = try await connection.query("""
                    INSERT INTO \(unescaped: s).request_keys (key, request_id)
                    SELECT k, nextval('\(unescaped: s).request_ids') FROM unnest(\(keys)::text[]) AS k
                    ON CONFLICT (key) DO NOTHING RETURNING key, request_id
                    """, logger: logger)
                var fresh = Set<String>()
                for try await (key, id) in inserted.decode((String, Int64).self) {
                    taken[key] = id
                    fresh.insert(key)
                }
                let seen = keys.filter { !fresh.contains($0) }
                if !seen.isEmpty {
                    let rows = try await connection.query(
                        "SELECT key, request_id FROM \(unescaped: s).request_keys WHERE key = ANY(\(seen)::text[])",
                        logger: logger)
                    for try await (key, id) in rows.decode((String, Int64).self) { taken[key] = id }
                }
                for (key, index) in firstIndexOfKey.sorted(by: { $0.value < $1.value }) where fresh.contains(key) {
                    newIDs.append(taken[key]!)
                    newLines.append(lines[index].url)
                }
                for (index, line) in lines.enumerated() {
                    if let key = line.key { ids[index] = taken[key] ?? 0 }
                }
            }
            let unkeyed = lines.indices.filter { lines[$0].key == nil }
            if !unkeyed.isEmpty {
                let rows = try await connection.query(
                    "SELECT nextval('\(unescaped: s).request_ids') FROM generate_series(1, \(unkeyed.count))",
                    logger: logger)
                var fresh: [Int64] = []
                for try await id in rows.decode(Int64.self) { fresh.append(id) }
                fresh.sort()
                for (index, id) in zip(unkeyed, fresh) {
                    ids[index] = id
                    newIDs.append(id)
                    newLines.append(lines[index].url)
                }
            }
            if !newIDs.isEmpty {
                try await connection.query("""
                    INSERT INTO \(unescaped: s).requests (id, line, max_attempts)
                    SELECT id, line, \(maxAttempts) FROM unnest(\(newIDs)::int8[], \(newLines)::text[]) AS t(id, line)
                    """, logger: logger)
                try await connection.query("SELECT pg_notify(\(channel), '')", logger: logger)
            }
            return ids
        }
    }

    // MARK: hosts and leases

    /// Registers a host; its lease runs `lease` from now.
    func register(name: String, lease: Duration, on connection: PostgresConnection) async throws -> Int64 {
        let rows = try await connection.query("""
            INSERT INTO \(unescaped: s).hosts (name, expires_at)
            VALUES (\(name), now() + make_interval(secs => \(lease.seconds))) RETURNING id
            """, logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw QueueError("registering the host returned no row")
    }

    /// Extends the host's lease; false when its row is gone (another host
    /// found it expired and returned its requests to the queue).
    func heartbeat(host: Int64, lease: Duration, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query("""
            UPDATE \(unescaped: s).hosts SET expires_at = now() + make_interval(secs => \(lease.seconds))
            WHERE id = \(host) RETURNING id
            """, logger: logger)
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }

    /// Leaves: the host's row goes, and so does any lease it still holds
    /// (those requests run again elsewhere).
    func unregister(host: Int64, on connection: PostgresConnection) async throws -> Int {
        try await connection.withTransaction(logger: logger) { connection in
            let rows = try await connection.query("""
                UPDATE \(unescaped: s).requests SET leased_by = NULL WHERE leased_by = \(host) RETURNING id
                """, logger: logger)
            var released = 0
            for try await _ in rows.decode(Int64.self) { released += 1 }
            try await connection.query("DELETE FROM \(unescaped: s).hosts WHERE id = \(host)", logger: logger)
            if released > 0 { try await connection.query("SELECT pg_notify(\(channel), '')", logger: logger) }
            return released
        }
    }

    /// Expired hosts are removed; their requests go back to the queue, or,
    /// past their attempts, end dead with an `Abandoned` error outcome.
    /// Returns (returned to the queue, dead).
    func rescue(recordedBy host: String, on connection: PostgresConnection) async throws -> (Int, Int) {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                "DELETE FROM \(unescaped: s).hosts WHERE expires_at < now()", logger: logger)
            // Leases of hosts that are gone, however they went.
            let orphaned = """
                leased_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(s).hosts h WHERE h.id = leased_by)
                """
            let released = try await connection.query(PostgresQuery(unsafeSQL: """
                UPDATE \(s).requests SET leased_by = NULL WHERE \(orphaned) AND attempt < max_attempts RETURNING id
                """), logger: logger)
            var returned = 0
            for try await _ in released.decode(Int64.self) { returned += 1 }
            let exhausted = try await connection.query(PostgresQuery(unsafeSQL: """
                DELETE FROM \(s).requests WHERE \(orphaned) RETURNING id, line, attempt, enqueued_at
                """), logger: logger)
            var ids: [Int64] = [], lines: [String] = [], attempts: [Int32] = [], enqueued: [Date] = []
            var outcomes: [String] = [], params: [String] = [], callbacks: [String] = []
            for try await (id, line, attempt, enqueuedAt) in exhausted.decode((Int64, String, Int32, Date).self) {
                let record = DeadRequest.record(line: line, attempts: Int(attempt))
                ids.append(id); lines.append(line); attempts.append(attempt); enqueued.append(enqueuedAt)
                outcomes.append(record.outcome.kind.rawValue)
                params.append(StoredParameters.encode(record.outcome.parameters))
                callbacks.append(record.callback ?? "")
            }
            if !ids.isEmpty {
                try await connection.query("""
                    INSERT INTO \(unescaped: s).outcomes
                        (request_id, line, attempts, enqueued_at, outcome, params, callback, host, dead)
                    SELECT id, line, attempts, enqueued_at, outcome, params, NULLIF(callback, ''), \(host), true
                    FROM unnest(\(ids)::int8[], \(lines)::text[], \(attempts)::int4[], \(enqueued)::timestamptz[],
                                \(outcomes)::text[], \(params)::text[], \(callbacks)::text[])
                        AS t(id, line, attempts, enqueued_at, outcome, params, callback)
                    ON CONFLICT (request_id) DO NOTHING
                    """, logger: logger)
            }
            if returned > 0 { try await connection.query("SELECT pg_notify(\(channel), '')", logger: logger) }
            return (returned, ids.count)
        }
    }

    // MARK: claim and record

    /// Leases up to `limit` waiting requests, oldest first, to `host`; each
    /// one's attempt goes up by one, which fences every earlier holder.
    func claim(limit: Int, host: Int64, on connection: PostgresConnection) async throws -> [ClaimedRequest] {
        let rows = try await connection.query("""
            WITH next AS (
                SELECT id FROM \(unescaped: s).requests WHERE leased_by IS NULL
                ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            UPDATE \(unescaped: s).requests r SET leased_by = \(host), attempt = r.attempt + 1, leased_at = now()
            FROM next WHERE r.id = next.id
            RETURNING r.id, r.line, r.attempt
            """, logger: logger)
        var claimed: [ClaimedRequest] = []
        for try await (id, line, attempt) in rows.decode((Int64, String, Int32).self) {
            claimed.append(ClaimedRequest(id: id, line: line, attempt: attempt, host: host))
        }
        claimed.sort { $0.id < $1.id }
        return claimed
    }

    /// The requests `host` holds (after a claim whose answer was lost: they
    /// are this host's to run, not anyone else's).
    func held(by host: Int64, on connection: PostgresConnection) async throws -> [ClaimedRequest] {
        let rows = try await connection.query("""
            SELECT id, line, attempt FROM \(unescaped: s).requests WHERE leased_by = \(host) ORDER BY id
            """, logger: logger)
        var held: [ClaimedRequest] = []
        for try await (id, line, attempt) in rows.decode((Int64, String, Int32).self) {
            held.append(ClaimedRequest(id: id, line: line, attempt: attempt, host: host))
        }
        return held
    }

    /// Returns requests that were claimed but never started; the claim is
    /// undone, attempt included, since nothing ran.
    func release(_ requests: [ClaimedRequest], on connection: PostgresConnection) async throws {
        guard !requests.isEmpty else { return }
        try await connection.query("""
            UPDATE \(unescaped: s).requests r SET leased_by = NULL, attempt = r.attempt - 1
            FROM unnest(\(requests.map(\.id))::int8[], \(requests.map(\.attempt))::int4[], \(requests.map(\.host))::int8[])
                AS f(id, attempt, host)
            WHERE r.id = f.id AND r.attempt = f.attempt AND r.leased_by = f.host
            """, logger: logger)
        try await connection.query("SELECT pg_notify(\(channel), '')", logger: logger)
    }

    /// Records outcomes and retires their requests in one statement, for
    /// the requests whose lease is still the one given (same host, same
    /// attempt). Returns the ids recorded; the others were fenced off.
    func record(_ outcomes: [FinishedRequest], host: String, on connection: PostgresConnection) async throws -> Set<Int64> {
        let rows = try await connection.query("""
            WITH batch AS (
                SELECT * FROM unnest(\(outcomes.map(\.id))::int8[], \(outcomes.map(\.attempt))::int4[],
                                     \(outcomes.map(\.host))::int8[], \(outcomes.map(\.outcome))::text[],
                                     \(outcomes.map(\.params))::text[], \(outcomes.map(\.callback))::text[])
                    AS b(id, attempt, host, outcome, params, callback)),
            done AS (
                DELETE FROM \(unescaped: s).requests r USING batch b
                WHERE r.id = b.id AND r.attempt = b.attempt AND r.leased_by = b.host
                RETURNING r.id, r.line, r.attempt, r.enqueued_at)
            INSERT INTO \(unescaped: s).outcomes (request_id, line, attempts, enqueued_at, outcome, params, callback, host)
            SELECT d.id, d.line, d.attempt, d.enqueued_at, b.outcome, b.params, NULLIF(b.callback, ''), \(host)
            FROM done d JOIN batch b ON b.id = d.id
            ON CONFLICT (request_id) DO NOTHING
            RETURNING request_id
            """, logger: logger)
        var recorded = Set<Int64>()
        for try await id in rows.decode(Int64.self) { recorded.insert(id) }
        return recorded
    }

    /// Of `outcomes`, those already recorded by `host` at that attempt: after
    /// a lost connection, the ones whose transaction did commit.
    func alreadyRecorded(_ outcomes: [FinishedRequest], host: String, on connection: PostgresConnection) async throws -> Set<Int64> {
        let rows = try await connection.query("""
            SELECT o.request_id FROM \(unescaped: s).outcomes o
            JOIN unnest(\(outcomes.map(\.id))::int8[], \(outcomes.map(\.attempt))::int4[]) AS f(id, attempt)
              ON o.request_id = f.id AND o.attempts = f.attempt
            WHERE o.host = \(host)
            """, logger: logger)
        var recorded = Set<Int64>()
        for try await id in rows.decode(Int64.self) { recorded.insert(id) }
        return recorded
    }

    // MARK: reading and operations

    /// Up to `limit` committed outcomes after `cursor`, by recording
    /// transaction then position, and the snapshot's horizon: every
    /// transaction below it has ended, so no outcome below it can still
    /// appear (see `OutcomeReader`).
    func outcomes(after cursor: OutcomeCursor, limit: Int, on connection: PostgresConnection) async throws
        -> (outcomes: [StoredOutcome], horizon: UInt64) {
        let rows = try await connection.query("""
            SELECT o.recorded_by_xact::text AS xact, o.position, o.request_id, o.line, o.outcome, o.params,
                   coalesce(o.callback, ''), o.attempts, o.dead, pg_snapshot_xmin(pg_current_snapshot())::text
            FROM \(unescaped: s).outcomes o
            WHERE (o.recorded_by_xact, o.position) > (\(cursor.transaction)::xid8, \(cursor.position))
            ORDER BY o.recorded_by_xact, o.position LIMIT \(limit)
            """, logger: logger)
        var outcomes: [StoredOutcome] = []
        var horizon: UInt64 = 0
        for try await (xact, position, id, line, outcome, params, callback, attempts, dead, xmin)
            in rows.decode((String, Int64, Int64, String, String, String, String, Int32, Bool, String).self) {
            horizon = UInt64(xmin) ?? 0
            outcomes.append(StoredOutcome(
                cursor: OutcomeCursor(transaction: xact, position: position), requestID: id, line: line,
                kind: OutcomeKind(rawValue: outcome) ?? .error, params: params,
                callback: callback.isEmpty ? nil : callback, attempts: Int(attempts), dead: dead))
        }
        return (outcomes, horizon)
    }

    /// The cursor just before request `id`'s outcome, for `--since`.
    func cursor(before id: Int64, on connection: PostgresConnection) async throws -> OutcomeCursor? {
        let rows = try await connection.query("""
            SELECT recorded_by_xact::text AS xact, position FROM \(unescaped: s).outcomes WHERE request_id = \(id)
            """, logger: logger)
        for try await (xact, position) in rows.decode((String, Int64).self) {
            return OutcomeCursor(transaction: xact, position: position)
        }
        return nil
    }

    func status(on connection: PostgresConnection) async throws -> QueueStatus {
        let rows = try await connection.query("""
            SELECT
              (SELECT count(*) FROM \(unescaped: s).requests WHERE leased_by IS NULL),
              (SELECT count(*) FROM \(unescaped: s).requests WHERE leased_by IS NOT NULL),
              (SELECT count(*) FROM \(unescaped: s).outcomes WHERE NOT dead),
              (SELECT count(*) FROM \(unescaped: s).outcomes WHERE dead),
              (SELECT coalesce(extract(epoch FROM now() - min(enqueued_at)), 0)::float8
                 FROM \(unescaped: s).requests WHERE leased_by IS NULL),
              (SELECT count(*) FROM \(unescaped: s).hosts WHERE expires_at >= now())
            """, logger: logger)
        for try await (ready, leased, done, dead, age, hosts) in rows.decode((Int64, Int64, Int64, Int64, Double, Int64).self) {
            return QueueStatus(ready: Int(ready), leased: Int(leased), done: Int(done), dead: Int(dead),
                               oldestReadySeconds: age, hosts: Int(hosts))
        }
        throw QueueError("status returned no row")
    }

    /// Dead requests, oldest first.
    func dead(limit: Int, on connection: PostgresConnection) async throws -> [StoredOutcome] {
        let rows = try await connection.query("""
            SELECT recorded_by_xact::text AS xact, position, request_id, line, outcome, params, coalesce(callback, ''), attempts
            FROM \(unescaped: s).outcomes WHERE dead ORDER BY request_id LIMIT \(limit)
            """, logger: logger)
        var outcomes: [StoredOutcome] = []
        for try await (xact, position, id, line, outcome, params, callback, attempts)
            in rows.decode((String, Int64, Int64, String, String, String, String, Int32).self) {
            outcomes.append(StoredOutcome(
                cursor: OutcomeCursor(transaction: xact, position: position), requestID: id, line: line,
                kind: OutcomeKind(rawValue: outcome) ?? .error, params: params,
                callback: callback.isEmpty ? nil : callback, attempts: Int(attempts), dead: true))
        }
        return outcomes
    }

    /// Puts dead requests back in the queue (all of them when `ids` is nil),
    /// with their attempts reset; returns the ids re-queued.
    func retryDead(_ ids: [Int64]?, maxAttempts: Int, on connection: PostgresConnection) async throws -> [Int64] {
        try await connection.withTransaction(logger: logger) { connection in
            let rows = try await connection.query("""
                WITH revived AS (
                    DELETE FROM \(unescaped: s).outcomes
                    WHERE dead AND (\(ids == nil) OR request_id = ANY(\(ids ?? [])::int8[]))
                    RETURNING request_id, line)
                INSERT INTO \(unescaped: s).requests (id, line, max_attempts)
                SELECT request_id, line, \(maxAttempts) FROM revived
                RETURNING id
                """, logger: logger)
            var revived: [Int64] = []
            for try await id in rows.decode(Int64.self) { revived.append(id) }
            if !revived.isEmpty { try await connection.query("SELECT pg_notify(\(channel), '')", logger: logger) }
            return revived.sorted()
        }
    }

    /// Deletes outcomes recorded more than `retention` ago, and their keys,
    /// `batch` rows per transaction so a prune never holds long locks.
    /// Returns how many went.
    func prune(retention: Duration, batch: Int = 5_000, on connection: PostgresConnection) async throws -> Int {
        var total = 0
        while true {
            let rows = try await connection.query("""
                WITH gone AS (
                    DELETE FROM \(unescaped: s).outcomes WHERE request_id IN (
                        SELECT request_id FROM \(unescaped: s).outcomes
                        WHERE recorded_at < now() - make_interval(secs => \(retention.seconds))
                        ORDER BY recorded_at LIMIT \(batch))
                    RETURNING request_id),
                keys AS (
                    DELETE FROM \(unescaped: s).request_keys WHERE request_id IN (SELECT request_id FROM gone))
                SELECT count(*) FROM gone
                """, logger: logger)
            var count = 0
            for try await n in rows.decode(Int64.self) { count = Int(n) }
            total += count
            if count < batch { return total }
        }
    }
}

extension Duration {
    /// Seconds as a Double, for `make_interval(secs => …)`.
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
