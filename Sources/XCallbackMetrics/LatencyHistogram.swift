/// Handler latency in fixed buckets (seconds, as Prometheus counts them),
/// in rows: a plug-in keeps one row per outcome class, so one relaxed add
/// counts a request's outcome and its latency at once. Observing is a scan
/// of at most sixteen bounds and one add (two when it read a tick).
///
/// The bounds run from 100 µs (an in-process handler takes microseconds)
/// to 30 s (the default `--timeout`), 1–2.5–5 per decade, 16 of them.
/// Requests are stamped with the coarse monotonic clock, whose tick is
/// 1–4 ms (4 ms on a kernel with HZ=250): a request shorter than a tick
/// reads 0 unless it crosses one, when it reads one tick. So the buckets
/// under the tick count requests that ended within the tick they began
/// in, the sum and the mean stay right on average (a request of d crosses
/// a tick with probability d/tick), and a quantile under the tick is an
/// interpolation, not a measurement.
public final class LatencyHistogram: Sendable {
    /// Upper bounds in nanoseconds; `+Inf` is the last bucket.
    public static let bounds: [UInt64] = [
        100_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000, 100_000_000,
        250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000, 5_000_000_000, 10_000_000_000, 30_000_000_000,
    ]
    /// The bounds as the `le` label writes them.
    public static let boundLabels = [
        "0.0001", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
        "0.25", "0.5", "1", "2.5", "5", "10", "30",
    ]
    /// Buckets a row has: `bounds.count + 1` (with `+Inf`), as a literal
    /// the compiler folds (the tests hold it to that).
    @usableFromInline static let bucketCount = 17

    public let rows: Int
    /// Per row, per bucket (not cumulative, `+Inf` last); then the sum in
    /// ns, over all rows.
    @usableFromInline let cells: CounterArray
    @usableFromInline let sumCell: Int

    public init(rows: Int = 1) {
        precondition(rows > 0)
        self.rows = rows
        sumCell = rows * Self.bucketCount
        cells = CounterArray(count: sumCell + 1)
    }

    // Inlinable: the request path calls it from the host module.
    @inlinable
    public func observe(nanoseconds: UInt64, row: Int = 0) {
        precondition(row >= 0 && row < rows)
        let first = row * Self.bucketCount
        // Most requests end within the tick of the coarse clock they began
        // in (0 ns), in the first bucket: one add, no scan.
        guard nanoseconds > Self.firstBound else {
            cells.add(at: first)
            if nanoseconds > 0 { cells.add(nanoseconds, at: sumCell) }
            return
        }
        observe(slow: nanoseconds, first: first)
    }

    @usableFromInline
    func observe(slow nanoseconds: UInt64, first: Int) {
        var bucket = 1
        let bounds = Self.bounds
        while bucket < bounds.count && nanoseconds > bounds[bucket] { bucket += 1 }
        cells.add(at: first + bucket)
        cells.add(nanoseconds, at: sumCell)
    }

    @usableFromInline static let firstBound: UInt64 = 100_000

    /// Observations in `row`, whatever their latency.
    public func count(row: Int) -> UInt64 {
        precondition(row >= 0 && row < rows)
        let first = row * Self.bucketCount
        return (first..<first + Self.bucketCount).reduce(0) { $0 &+ cells.value(at: $1) }
    }

    /// Cumulative counts per bound, `+Inf` last, over all rows; and the
    /// sum in seconds.
    public var snapshot: (cumulative: [UInt64], sumSeconds: Double) {
        var running: UInt64 = 0
        var cumulative: [UInt64] = []
        for bucket in 0..<Self.bucketCount {
            for row in 0..<rows { running &+= cells.value(at: row * Self.bucketCount + bucket) }
            cumulative.append(running)
        }
        return (cumulative, Double(cells.value(at: sumCell)) / 1e9)
    }
}
