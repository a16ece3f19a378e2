#if Queue  // the package's Queue trait: swift build --traits Queue
import Foundation
import Logging
import PostgresNIO
import XCallbackURL

/// Every statement the queue runs, each a short transaction (docs/queue.md
/// gives the rules they keep). `s` is the schema, checked to be a plain
/// identifier by `QueueLocation`.
///
/// A host's statements answer in one row (arrays, aggregated by the
/// server), however many requests they cover. PostgresNIO (1.33) traps
/// when the server ends a connection while a result of many rows is still
/// streaming and its reader has not asked for more: NIO then delivers
/// the rest without a read, and its row stream's `channelReadComplete`
/// fails a precondition ("How can we receive a body part, after a
/// channelReadComplete, but no read has been forwarded yet") — a SIGILL
/// that took down a host whose connections were being terminated, at
/// its stop. A single row leaves nothing to stream.
struct QueueStore: Sendable {
    let schema: String
    let logger: Logger

    private var s: String { schema }
    /// The channel `enqueue` notifies and hosts listen on.
    var channel: String { "\(schema)_requests" }

    // MARK: enqueue

    /// Inserts a batch through the schema's `enqueue` function (which
    /// draws the ids and checks the lines again: QueueFunctions); returns
    /// each line's request id, in order. Ids follow line order. A line
    /// whose key was seen before gets that request's id and is not inserted.
    func enqueue(_ lines: [EnqueueLine], maxAttempts: Int, on connection: PostgresConnection) async throws -> [Int64] {
        let rows = try await connection.query("""
            SELECT \(unescaped: s).enqueue(\(lines.map(\.url))::text[], \(lines.map { $0.key ?? "" })::text[],
                                          \(Int32(clamping: maxAttempts)))
            """, logger: logger)
        for try await ids in rows.decode([Int64].self) { return ids }
        throw QueueError("enqueue returned no row")
    }

    // MARK: hosts and leases

    /// Registers a host, under this login (QueueFunctions); its lease runs
    /// `lease` from now. Returns its id, drawn by the server.
    func register(name: String, lease: Duration, on connection: PostgresConnection) async throws -> Int64 {
        let rows = try await connection.query(
            "SELECT \(unescaped: s).register_host(\(name), \(lease.seconds))", logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw QueueError("registering the host returned no row")
    }

    /// Extends the host's lease; false when its row is gone (another host
    /// found it expired and returned its requests to the queue).
    func heartbeat(host: Int64, lease: Duration, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT \(unescaped: s).heartbeat(\(host), \(lease.seconds))", logger: logger)
        for try await live in rows.decode(Bool.self) { return live }
        return false
    }

    /// Leaves: the host's row goes, and so does any lease it still holds
    /// (those requests run again elsewhere).
    func unregister(host: Int64, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query("SELECT \(unescaped: s).unregister_host(\(host))", logger: logger)
        for try await released in rows.decode(Int32.self) { return Int(released) }
        return 0
    }

    /// Expired hosts are removed. Their requests go back to the queue as
    /// suspects, which run alone; one that was running alone takes a strike,
    /// and at `max_attempts` strikes it is dead, with an `Abandoned` error
    /// outcome. Returns (returned to the queue, dead).
    func rescue(recordedBy host: String, on connection: PostgresConnection) async throws -> (Int, Int) {
        try await connection.withTransaction(logger: logger) { connection in
            // The function returns to the queue what it may, and locks and
            // returns the rest, out of strikes: dead, with an outcome written
            // here and recorded by `record_dead`, which retires only such requests.
            let rescued = try await connection.query(
                "SELECT returned, dead_ids, dead_lines, dead_strikes FROM \(unescaped: s).rescue()", logger: logger)
            var returned = 0
            var ids: [Int64] = [], outcomes: [String] = [], params: [String] = [], callbacks: [String] = []
            for try await (count, deadIDs, lines, strikes) in rescued.decode((Int32, [Int64], [String], [Int32]).self) {
                returned = Int(count)
                for (id, (line, strikes)) in zip(deadIDs, zip(lines, strikes)) {
                    let record = DeadRequest.record(line: line, strikes: Int(strikes))
                    ids.append(id)
                    outcomes.append(record.outcome.kind.rawValue)
                    params.append(StoredParameters.encode(record.outcome.parameters))
                    callbacks.append(record.callback ?? "")
                }
            }
            var dead = 0
            if !ids.isEmpty {
                let rows = try await connection.query("""
                    SELECT \(unescaped: s).record_dead(\(ids)::int8[], \(outcomes)::text[], \(params)::text[],
                                                       \(callbacks)::text[], \(host))
                    """, logger: logger)
                for try await count in rows.decode(Int32.self) { dead = Int(count) }
            }
            return (returned, dead)
        }
    }

    // MARK: claim and record

    /// What a claim found.
    struct Claim: Sendable {
        var requests: [ClaimedRequest] = []
        /// The host's lease had run out: it claimed nothing and must register again.
        var hostGone = false
        /// Suspects wait to run alone (`isolate`), before more work is claimed.
        var isolatedWaiting = false
        /// Suspects wait to run beside other work.
        var besideWaiting = false
    }

    /// The claim connection's planner settings. The claim wants the oldest
    /// `limit` waiting requests, which the partial index `requests_ready`
    /// gives in order, a few pages read. A queue's statistics are stale by
    /// nature (a backlog enqueued since the last analyze is estimated at a
    /// few hundred rows), and with them the planner reads every waiting
    /// request and sorts them all to keep `limit`: 35 ms instead of 1.5 ms
    /// for 256 of 100,000 waiting, and most of a host's time (a third of
    /// the throughput, Benchmarks/Queue). Without sorting, only the index's
    /// order is left.
    static let claimSettings = [("enable_sort", "off")]

    /// Leases up to `limit` waiting requests (suspects excluded), oldest
    /// first, to `host`, only while its lease is live, which this also
    /// extends. Each claim raises the request's attempt, and the lease is
    /// (host, attempt): that fences every earlier holder.
    func claim(limit: Int, host: Int64, lease: Duration, on connection: PostgresConnection) async throws -> Claim {
        try await claim(.fresh, limit: limit, host: host, lease: lease, on: connection)
    }

    /// Leases up to `limit` suspects back from one dead host, to run beside
    /// other work (QueueFunctions).
    func claimBeside(limit: Int, host: Int64, lease: Duration, on connection: PostgresConnection) async throws -> Claim {
        try await claim(.beside, limit: limit, host: host, lease: lease, on: connection)
    }

    /// Leases one suspect to run alone: the host runs nothing else meanwhile.
    func claimSuspect(host: Int64, lease: Duration, on connection: PostgresConnection) async throws -> Claim {
        try await claim(.alone, limit: 1, host: host, lease: lease, on: connection)
    }

    private func claim(_ kind: QueueSchema.ClaimKind, limit: Int, host: Int64, lease: Duration,
                       on connection: PostgresConnection) async throws -> Claim {
        // In one row, as every answer of a host's (see the type's comment).
        let answer = """
            SELECT coalesce(array_agg(claimed_id) FILTER (WHERE marker = 0), '{}'),
                   coalesce(array_agg(claimed_line) FILTER (WHERE marker = 0), '{}'),
                   coalesce(array_agg(claimed_attempt) FILTER (WHERE marker = 0), '{}'),
                   coalesce(bool_or(marker = 1), false), coalesce(bool_or(marker = 2), false),
                   coalesce(bool_or(marker = 3), false)
            """
        let rows: PostgresRowSequence
        switch kind {
        case .fresh:
            rows = try await connection.query("""
                \(unescaped: answer) FROM \(unescaped: s).claim(\(host), \(Int32(clamping: limit)), \(lease.seconds))
                """, logger: logger)
        case .beside:
            rows = try await connection.query("""
                \(unescaped: answer) FROM \(unescaped: s).claim_beside(\(host), \(Int32(clamping: limit)), \(lease.seconds))
                """, logger: logger)
        case .alone:
            rows = try await connection.query("""
                \(unescaped: answer) FROM \(unescaped: s).claim_suspect(\(host), \(lease.seconds))
                """, logger: logger)
        }
        var claim = Claim()
        for try await (ids, lines, attempts, gone, isolated, beside)
            in rows.decode(([Int64], [String], [Int32], Bool, Bool, Bool).self) {
            claim.hostGone = gone
            claim.isolatedWaiting = isolated
            claim.besideWaiting = beside
            for (id, (line, attempt)) in zip(ids, zip(lines, attempts)) {
                claim.requests.append(ClaimedRequest(id: id, line: line, attempt: attempt, host: host,
                                                     beside: kind == .beside))
            }
        }
        claim.requests.sort { $0.id < $1.id }
        // Run nothing the server may still roll back (see `confirmCommit`).
        if !claim.requests.isEmpty { try await confirmCommit(on: connection) }
        return claim
    }

    /// The requests `host` holds (after a claim whose answer was lost, or
    /// that committed late: they are this host's to run, not anyone
    /// else's), leased at least `olderThan` ago, so a claim whose answer is
    /// on its way is not among them.
    func held(by host: Int64, olderThan: Duration = .zero, on connection: PostgresConnection) async throws -> [ClaimedRequest] {
        let rows = try await connection.query("""
            SELECT coalesce(array_agg(id ORDER BY id), '{}'), coalesce(array_agg(line ORDER BY id), '{}'),
                   coalesce(array_agg(attempt ORDER BY id), '{}')
            FROM \(unescaped: s).requests
            WHERE leased_by = \(host) AND leased_at <= now() - make_interval(secs => \(olderThan.seconds))
            """, logger: logger)
        var held: [ClaimedRequest] = []
        for try await (ids, lines, attempts) in rows.decode(([Int64], [String], [Int32]).self) {
            for (id, (line, attempt)) in zip(ids, zip(lines, attempts)) {
                held.append(ClaimedRequest(id: id, line: line, attempt: attempt, host: host))
            }
        }
        return held
    }

    /// Returns requests that were claimed but never started; the claim is
    /// undone, attempt included, since nothing ran. Each found by its
    /// primary key (`+ 0`: see migration 3 in QueueSchema).
    func release(_ requests: [ClaimedRequest], on connection: PostgresConnection) async throws {
        guard !requests.isEmpty else { return }
        try await connection.query("""
            SELECT \(unescaped: s).release(\(requests.map(\.id))::int8[], \(requests.map(\.attempt))::int4[],
                                          \(requests.map(\.host))::int8[])
            """, logger: logger)
    }

    /// Records outcomes and retires their requests in one statement, for
    /// the requests whose lease is still the one given (same host, same
    /// attempt). Returns the ids recorded; the others were fenced off.
    func record(_ outcomes: [FinishedRequest], host: String, on connection: PostgresConnection) async throws -> Set<Int64> {
        let rows = try await connection.query("""
            SELECT coalesce(array_agg(id), '{}') FROM \(unescaped: s).record_outcomes(
                \(outcomes.map(\.id))::int8[], \(outcomes.map(\.attempt))::int4[], \(outcomes.map(\.host))::int8[],
                \(outcomes.map(\.outcome))::text[], \(outcomes.map(\.params))::text[], \(outcomes.map(\.callback))::text[],
                \(host)) AS id
            """, logger: logger)
        var recorded = Set<Int64>()
        for try await ids in rows.decode([Int64].self) { recorded.formUnion(ids) }
        // Report nothing recorded that the server may still roll back.
        if !recorded.isEmpty { try await confirmCommit(on: connection) }
        return recorded
    }

    /// Returns once the last statement on `connection` has committed. The
    /// server commits a statement of the extended protocol at the Sync that
    /// follows it, after sending its rows and its CommandComplete, and
    /// PostgresNIO hands the rows over at CommandComplete: a connection
    /// ended between the two (`pg_terminate_backend`, a server crash) leaves
    /// a client that saw a claim or a record the server rolled back. A claim
    /// believed then ran under an attempt number that the next claim handed
    /// out again; a record believed left its request leased, to be taken up
    /// and run again under the same attempt. PostgresNIO sends the next
    /// statement only after the server's ReadyForQuery, which comes after
    /// the commit, so that statement's answer confirms it: one short round
    /// trip per batch claimed or recorded.
    private func confirmCommit(on connection: PostgresConnection) async throws {
        try await connection.query("SELECT 1", logger: logger)
    }

    /// Where requests are whose outcome this host could not record (their
    /// lease had moved on), for a log line that says what happened. `host`
    /// and `name` are this host's id and name now (an earlier id of the same
    /// process counts as this host).
    func fenced(_ ids: [Int64], host: Int64, name: String, on connection: PostgresConnection) async throws -> FencedRequests {
        let rows = try await connection.query("""
            SELECT coalesce(array_agg(
                CASE WHEN o.request_id IS NOT NULL THEN 0 WHEN r.id IS NULL THEN 1 WHEN r.leased_by IS NULL THEN 2
                     WHEN r.leased_by = \(host) OR h.name = \(name) THEN 3 ELSE 4 END), '{}')
            FROM unnest(\(ids)::int8[]) AS f(id)
            LEFT JOIN \(unescaped: s).outcomes o ON o.request_id = f.id
            LEFT JOIN \(unescaped: s).requests r ON r.id = f.id
            LEFT JOIN \(unescaped: s).hosts h ON h.id = r.leased_by
            """, logger: logger)
        var fenced = FencedRequests()
        for try await places in rows.decode([Int32].self) {
            for place in places {
                switch place {
                case 0: fenced.recorded += 1
                case 1: fenced.gone += 1
                case 2: fenced.queued += 1
                case 3: fenced.here += 1
                default: fenced.elsewhere += 1
                }
            }
        }
        return fenced
    }

    /// Of `outcomes`, those already recorded by `host` at that attempt: after
    /// a lost connection, the ones whose transaction did commit.
    func alreadyRecorded(_ outcomes: [FinishedRequest], host: String, on connection: PostgresConnection) async throws -> Set<Int64> {
        let rows = try await connection.query("""
            SELECT coalesce(array_agg(o.request_id), '{}') FROM \(unescaped: s).outcomes o
            JOIN unnest(\(outcomes.map(\.id))::int8[], \(outcomes.map(\.attempt))::int4[]) AS f(id, attempt)
              ON o.request_id = f.id AND o.attempts = f.attempt
            WHERE o.host = \(host)
            """, logger: logger)
        var recorded = Set<Int64>()
        for try await ids in rows.decode([Int64].self) { recorded.formUnion(ids) }
        return recorded
    }

    // MARK: reading and operations

    /// Up to `limit` committed outcomes after `cursor`, by recording
    /// transaction then position, and the snapshot's horizon: no outcome
    /// of a transaction below it can still appear (see `OutcomeReader`).
    ///
    /// The horizon is the oldest transaction still running, as the
    /// statement's snapshot sees it, that may write this database: one
    /// that `pg_stat_activity` shows running in another database never
    /// writes this queue, so it does not hold the horizon back (the
    /// snapshot's own `xmin` is cluster-wide: a transaction left open in
    /// another database held every follower back). One not found there
    /// has ended since the snapshot, or is prepared: it holds the horizon
    /// back for this read. Without any, the snapshot's `xmax`.
    ///
    /// In one row, as a host's answers (see the type's comment): a page of
    /// `limit` outcomes, cut short after 256 MB of lines (at least one),
    /// under the server's 1 GB for a value. `full`: the page was not the
    /// last, whether cut short or not.
    func outcomes(after cursor: OutcomeCursor, limit: Int, on connection: PostgresConnection) async throws
        -> (outcomes: [StoredOutcome], horizon: UInt64, full: Bool) {
        let rows = try await connection.query("""
            WITH horizon AS MATERIALIZED (
                SELECT coalesce(
                    (SELECT x FROM pg_snapshot_xip(pg_current_snapshot()) AS x
                     WHERE NOT EXISTS (
                         SELECT 1 FROM pg_stat_activity a
                         WHERE a.backend_xid = xid(x)
                           AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()))
                     ORDER BY x LIMIT 1),
                    pg_snapshot_xmax(pg_current_snapshot()))::text AS xact),
            read AS (
                SELECT o.*, sum(octet_length(o.line) + octet_length(o.params) + coalesce(octet_length(o.callback), 0))
                    OVER (ORDER BY o.recorded_by_xact, o.position) AS bytes
                FROM (SELECT * FROM \(unescaped: s).outcomes o
                      WHERE (o.recorded_by_xact, o.position) > (\(cursor.transaction)::xid8, \(cursor.position))
                      ORDER BY o.recorded_by_xact, o.position LIMIT \(limit)) o),
            page AS (
                SELECT * FROM read r
                WHERE r.bytes <= 268435456 OR (r.recorded_by_xact, r.position) = (
                    SELECT f.recorded_by_xact, f.position FROM read f ORDER BY f.recorded_by_xact, f.position LIMIT 1))
            SELECT coalesce(array_agg(p.recorded_by_xact::text ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(p.position ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(p.request_id ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(p.line ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(p.outcome ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(p.params ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(coalesce(p.callback, '') ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(p.attempts ORDER BY p.recorded_by_xact, p.position), '{}'),
                   coalesce(array_agg(p.dead ORDER BY p.recorded_by_xact, p.position), '{}'),
                   (SELECT h.xact FROM horizon h),
                   (SELECT count(*) FROM read) = \(limit) OR count(*) < (SELECT count(*) FROM read)
            FROM page p
            """, logger: logger)
        var outcomes: [StoredOutcome] = []
        var horizon: UInt64 = 0
        var full = false
        for try await (xacts, positions, ids, lines, kinds, params, callbacks, attempts, dead, safeBelow, more)
            in rows.decode(([String], [Int64], [Int64], [String], [String], [String], [String], [Int32], [Bool], String, Bool).self) {
            horizon = UInt64(safeBelow) ?? 0
            full = more
            // Arrays of one page, of one length; a shorter one is never indexed past.
            let count = [xacts.count, positions.count, lines.count, kinds.count, params.count, callbacks.count,
                         attempts.count, dead.count, ids.count].min() ?? 0
            for index in 0..<count {
                outcomes.append(StoredOutcome(
                    cursor: OutcomeCursor(transaction: xacts[index], position: positions[index]), requestID: ids[index],
                    line: lines[index], kind: OutcomeKind(rawValue: kinds[index]) ?? .error, params: params[index],
                    callback: callbacks[index].isEmpty ? nil : callbacks[index], attempts: Int(attempts[index]),
                    dead: dead[index]))
            }
        }
        return (outcomes, horizon, full)
    }

    /// The cursor of request `id`'s outcome, for `outcomes --after`.
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

    /// Puts dead requests back in the queue (all of them when `ids` is nil)
    /// with no strikes; they run alone, as suspects. Their attempt keeps
    /// counting runs. Returns the ids re-queued.
    func retryDead(_ ids: [Int64]?, maxAttempts: Int, on connection: PostgresConnection) async throws -> [Int64] {
        try await connection.withTransaction(logger: logger) { connection in
            let rows = try await connection.query("""
                WITH revived AS (
                    DELETE FROM \(unescaped: s).outcomes
                    WHERE dead AND (\(ids == nil) OR request_id = ANY(\(ids ?? [])::int8[]))
                    RETURNING request_id, line, attempts)
                INSERT INTO \(unescaped: s).requests (id, line, max_attempts, attempt, suspect, isolate)
                SELECT request_id, line, \(maxAttempts), attempts, true, true FROM revived
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
    func prune(retention: Duration, batch: Int = 5_000, on connection: PostgresConnection,
               progress: (@Sendable (Int) -> Void)? = nil) async throws -> Int {
        var total = 0
        while true {
            let count = try await connection.withTransaction(logger: logger) { connection in
            // A host's connections cut statements off after a few seconds;
            // a batch of a large table may take longer.
            try await connection.query("SET LOCAL statement_timeout = '5min'", logger: logger)
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
            return count
            }
            total += count
            if count < batch { return total }
            progress?(total)
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
#endif
