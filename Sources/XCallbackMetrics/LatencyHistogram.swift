/// Handler latency in fixed buckets (seconds, as Prometheus counts them).
/// Observing is a scan of a dozen bounds and three relaxed adds.
///
/// Requests are stamped with the coarse monotonic clock (a tick of 1–4 ms),
/// so the buckets start at 5 ms: below it the clock cannot tell.
public final class LatencyHistogram: Sendable {
    /// Upper bounds in nanoseconds; `+Inf` is the last bucket.
    public static let bounds: [UInt64] = [
        5_000_000, 10_000_000, 25_000_000, 50_000_000, 100_000_000, 250_000_000, 500_000_000,
        1_000_000_000, 2_500_000_000, 5_000_000_000, 10_000_000_000, 30_000_000_000,
    ]
    /// The bounds as the `le` label writes them.
    public static let boundLabels = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30"]

    /// Per bucket (not cumulative), then `+Inf`, then the sum in ns.
    let cells = CounterArray(count: LatencyHistogram.bounds.count + 2)

    public init() {}

    public func observe(nanoseconds: UInt64) {
        // Most requests end within the first bucket, most of those within
        // one tick of the coarse clock (0 ns): one add, no scan.
        guard nanoseconds > Self.firstBound else {
            cells.add(at: 0)
            if nanoseconds > 0 { cells.add(nanoseconds, at: Self.sumCell) }
            return
        }
        var bucket = 1
        let bounds = Self.bounds
        while bucket < bounds.count && nanoseconds > bounds[bucket] { bucket += 1 }
        cells.add(at: bucket)
        cells.add(nanoseconds, at: Self.sumCell)
    }

    private static let firstBound: UInt64 = 5_000_000
    private static let sumCell = 13

    /// Cumulative counts per bound, `+Inf` last, and the sum in seconds.
    public var snapshot: (cumulative: [UInt64], sumSeconds: Double) {
        var running: UInt64 = 0
        var cumulative: [UInt64] = []
        for bucket in 0...Self.bounds.count {
            running &+= cells.value(at: bucket)
            cumulative.append(running)
        }
        return (cumulative, Double(cells.value(at: Self.sumCell)) / 1e9)
    }
}
