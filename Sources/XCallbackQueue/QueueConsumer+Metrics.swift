#if Queue  // the package's Queue trait: swift build --traits Queue
import PostgresNIO
import XCallbackMetrics

// Where `run --queue --metrics` counts the queue's events (the
// `xcallback_queue_*` families, docs/observability.md): hooks of one line
// in QueueConsumer, each a few relaxed atomic adds per batch claimed or
// recorded, per heartbeat or per failure; nothing when metrics are off.

extension QueueConsumer {
    /// The queue's counts; nil unless the host collects metrics.
    var queueMetrics: QueueMetrics? { host.metrics?.queue }

    /// Marks the host as a queue consumer and has each connection count
    /// its failures under its own kind (a connection that cannot be
    /// opened, whichever it is, under `connect`).
    func countForMetrics(connections: [(QueueConnection, QueueDatabaseErrorKind)]) {
        guard let metrics = queueMetrics else { return }
        metrics.startConsuming()
        for (connection, kind) in connections {
            connection.failureCount.withLock { $0 = DatabaseFailureCount(metrics: metrics, kind: kind) }
        }
    }

    /// Requests handed to the dispatcher; `refused` were not (a stop began).
    func countClaimed(_ handed: [ClaimedRequest], refused: [ClaimedRequest]) {
        guard let metrics = queueMetrics, handed.count > refused.count else { return }
        metrics.claimed.add(UInt64(handed.count - refused.count))
        var reruns = 0
        for request in handed where request.attempt > 1 { reruns += 1 }
        for request in refused where request.attempt > 1 { reruns -= 1 }
        if reruns > 0 { metrics.reruns.add(UInt64(reruns)) }
    }

    func countRecorded(_ recorded: Int, fenced: Int) {
        guard let metrics = queueMetrics else { return }
        if recorded > 0 { metrics.recorded.add(UInt64(recorded)) }
        if fenced > 0 { metrics.fenced.add(UInt64(fenced)) }
    }

    func countRescued(_ returned: Int, dead: Int) {
        guard let metrics = queueMetrics else { return }
        if returned > 0 { metrics.rescued.add(UInt64(returned)) }
        if dead > 0 { metrics.dead.add(UInt64(dead)) }
    }

    func countHeartbeat(renewed: Bool) {
        if renewed { queueMetrics?.leaseRenewals.add() }
    }

    /// Reads the oldest ready request's age for the gauge: once per
    /// heartbeat, on the control connection, and only with metrics on. Two
    /// index lookups (`requests_ready`, `requests_suspect`), never a scan.
    func readOldestReady(on connection: QueueConnection) async throws {
        guard let metrics = queueMetrics else { return }
        let store = store
        let age = try await connection.run { connection in try await store.oldestReadyAge(on: connection) }
        metrics.oldestReady(seconds: age)
    }
}

/// Counts a connection's failures as `kind`, or as `connect` when it could
/// not be opened.
struct DatabaseFailureCount: Sendable {
    let metrics: QueueMetrics
    let kind: QueueDatabaseErrorKind

    func count(_ error: any Error) {
        metrics.databaseError(error is ConnectFailure ? .connect : kind)
    }
}

extension QueueStore {
    /// Seconds since the oldest request waiting to be claimed (suspects
    /// included, as `queue status` counts them) was enqueued; 0 when none
    /// waits. Ids follow enqueue order, so the first by id of each partial
    /// index is the oldest.
    func oldestReadyAge(on connection: PostgresConnection) async throws -> Double {
        let rows = try await connection.query("""
            SELECT coalesce(extract(epoch FROM now() - least(
                (SELECT enqueued_at FROM \(unescaped: schema).requests
                 WHERE leased_by IS NULL AND NOT suspect ORDER BY id LIMIT 1),
                (SELECT enqueued_at FROM \(unescaped: schema).requests
                 WHERE leased_by IS NULL AND suspect ORDER BY id LIMIT 1))), 0)::float8
            """, logger: logger)
        for try await age in rows.decode(Double.self) { return max(age, 0) }
        return 0
    }
}
#endif
