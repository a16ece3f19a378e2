/// Handler latency in fixed buckets (seconds, as Prometheus counts them).
/// Observing is a scan of at most sixteen bounds and three relaxed adds.
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

    /// Per bucket (not cumulative), then `+Inf`, then the sum in ns.
    let cells = CounterArray(count: LatencyHistogram.bounds.count + 2)

    public init() {}

    public func observe(nanoseconds: UInt64) {
        // Most requests end within the tick of the coarse clock they began
        // in (0 ns), in the first bucket: one add, no scan.
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

    private static let firstBound: UInt64 = 100_000
    /// `bounds.count + 1`, as a literal the compiler folds (the tests hold it to that).
    static let sumCell = 17

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
