/// Handler latency in fixed buckets (seconds, as Prometheus counts them),
/// fed only with the requests the host timed on the fine monotonic clock
/// (`LatencySampler` in the host): so its `_count` is the requests
/// sampled, and the requests themselves are counted apart, exactly
/// (`PluginMetrics`).
///
/// The bounds are fine where handlers take their time, from 10 µs to 1 s:
/// 30 a decade, each at most 8.4 % above the last, through 1, 2, 2.5 and 5
/// (so every bound of the earlier, coarse buckets is still one, for rules
/// that name an `le`). A quantile that `histogram_quantile` interpolates
/// within one of them is then within 8.4 % of the true one, however the
/// requests spread inside it (a p50 within about 4 %). Coarse bounds on
/// either side: 1, 2.5 and 5 µs below (a handler that fast is fast
/// enough), 2.5, 5, 10 and 30 s above (the default `--timeout`).
///
/// Observing is a binary search of the bounds and two relaxed adds, paid
/// only by a sampled request.
public final class LatencyHistogram: Sendable {
    /// A decade's fine bounds, in hundredths: geometric steps from 1 to 2
    /// (9), 2 to 2.5 (3), 2.5 to 5 (9) and 5 to 10 (9), to three digits.
    static let decadeSteps: [UInt64] = [
        100, 108, 117, 126, 136, 147, 159, 171, 185, 200, 215, 232, 250, 270, 292,
        315, 340, 367, 397, 429, 463, 500, 540, 583, 630, 680, 735, 794, 857, 926,
    ]

    /// Upper bounds in nanoseconds; `+Inf` is the last bucket.
    public static let bounds: [UInt64] = {
        var bounds: [UInt64] = [1_000, 2_500, 5_000]
        // 10 µs to 1 s: decades starting at 10^4 ... 10^8 ns.
        var decade: UInt64 = 100
        for _ in 0..<5 {
            bounds += decadeSteps.map { $0 * decade }
            decade *= 10
        }
        return bounds + [1_000_000_000, 2_500_000_000, 5_000_000_000, 10_000_000_000, 30_000_000_000]
    }()

    /// The bounds as the `le` label writes them: exact decimals of seconds.
    public static let boundLabels: [String] = bounds.map(secondsLabel)

    /// Buckets: the bounds and `+Inf`.
    public static let bucketCount = bounds.count + 1

    /// Per bucket (not cumulative, `+Inf` last); then the sum in ns.
    @usableFromInline let cells: CounterArray
    @usableFromInline let sumCell: Int

    public init() {
        sumCell = Self.bucketCount
        cells = CounterArray(count: sumCell + 1)
    }

    /// Counts one request that took `nanoseconds` (on the fine clock).
    public func observe(nanoseconds: UInt64) {
        // The first bound not below it (`le` is inclusive), `+Inf` past all.
        let bounds = Self.bounds
        var low = 0, high = bounds.count
        while low < high {
            let middle = (low + high) / 2
            if bounds[middle] < nanoseconds { low = middle + 1 } else { high = middle }
        }
        cells.add(at: low)
        cells.add(nanoseconds, at: sumCell)
    }

    /// Requests observed.
    public var count: UInt64 { (0..<Self.bucketCount).reduce(0) { $0 &+ cells.value(at: $1) } }

    /// Cumulative counts per bound, `+Inf` last; and the sum in seconds.
    public var snapshot: (cumulative: [UInt64], sumSeconds: Double) {
        var running: UInt64 = 0
        var cumulative: [UInt64] = []
        cumulative.reserveCapacity(Self.bucketCount)
        for bucket in 0..<Self.bucketCount {
            running &+= cells.value(at: bucket)
            cumulative.append(running)
        }
        return (cumulative, Double(cells.value(at: sumCell)) / 1e9)
    }

    /// Nanoseconds as seconds in plain decimals ("0.0000104", "2.5", "30").
    static func secondsLabel(_ nanoseconds: UInt64) -> String {
        let whole = nanoseconds / 1_000_000_000, fraction = nanoseconds % 1_000_000_000
        guard fraction > 0 else { return String(whole) }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 9 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }
}
