import XCallbackMetrics
import XCallbackSystem

/// One row of `xcallback top`: a plug-in as two scrapes of its host's
/// metrics show it.
struct TopRow: Equatable {
    var plugin: String
    var total: Double
    var perSecond: Double
    /// Seconds, from the latency histogram (nil: no request yet).
    var p50: Double?
    var p99: Double?
    var errors: Double
    var restarts: Double
    var quarantined: Bool
    var sandboxed: Bool
    var violations: Double
}

/// How `top` orders its rows (the keys that choose each).
enum TopSortKey: String, CaseIterable {
    case rate, p99, errors, restarts, name

    var key: Character {
        switch self {
        case .rate: "r"
        case .p99: "p"
        case .errors: "e"
        case .restarts: "s"
        case .name: "n"
        }
    }

    func ordered(_ rows: [TopRow]) -> [TopRow] {
        rows.sorted { a, b in
            func by(_ x: Double, _ y: Double) -> Bool? { x == y ? nil : x > y }
            let decided: Bool? = switch self {
            case .rate: by(a.perSecond, b.perSecond)
            case .p99: by(a.p99 ?? -1, b.p99 ?? -1)
            case .errors: by(a.errors, b.errors)
            case .restarts: by(a.restarts, b.restarts)
            case .name: nil
            }
            return decided ?? (a.plugin.utf8.lexicographicallyPrecedes(b.plugin.utf8))
        }
    }
}

/// Rows from a scrape, and the one before it (rates, and the latency of
/// the interval between them when it had requests).
enum TopTable {
    static func rows(current: [ScrapedSample], previous: [ScrapedSample]?, seconds: Double) -> [TopRow] {
        var plugins: [String] = []
        for sample in current {
            if let plugin = sample.labels["plugin"], !plugins.contains(plugin) { plugins.append(plugin) }
        }
        func sum(_ samples: [ScrapedSample], _ name: String, _ plugin: String, where extra: (ScrapedSample) -> Bool = { _ in true }) -> Double {
            samples.reduce(0) { $1.name == name && $1.labels["plugin"] == plugin && extra($1) ? $0 + $1.value : $0 }
        }
        return plugins.map { plugin in
            let total = sum(current, "xcallback_requests_total", plugin)
            let before = previous.map { sum($0, "xcallback_requests_total", plugin) }
            let buckets = histogram(current, plugin)
            let earlier = previous.map { histogram($0, plugin) } ?? []
            // The interval's own latency when it had requests; else all time.
            var window = buckets
            if earlier.count == buckets.count, !earlier.isEmpty {
                let delta = zip(buckets, earlier).map { (bound: $0.bound, count: $0.count - $1.count) }
                if (delta.last?.count ?? 0) > 0 { window = delta }
            }
            return TopRow(
                plugin: plugin, total: total,
                perSecond: before.map { seconds > 0 ? max(total - $0, 0) / seconds : 0 } ?? 0,
                p50: quantile(0.5, window), p99: quantile(0.99, window),
                errors: sum(current, "xcallback_requests_total", plugin) { $0.labels["outcome"] == "error" },
                restarts: sum(current, "xcallback_worker_restarts_total", plugin),
                quarantined: sum(current, "xcallback_plugin_quarantined", plugin) > 0,
                sandboxed: sum(current, "xcallback_plugin_sandboxed", plugin) > 0,
                violations: sum(current, "xcallback_sandbox_violations_total", plugin))
        }
    }

    /// Cumulative bucket counts by upper bound, `+Inf` last.
    static func histogram(_ samples: [ScrapedSample], _ plugin: String) -> [(bound: Double, count: Double)] {
        samples.compactMap { sample -> (bound: Double, count: Double)? in
            guard sample.name == "xcallback_request_duration_seconds_bucket", sample.labels["plugin"] == plugin,
                  let le = sample.labels["le"] else { return nil }
            return (le == "+Inf" ? .infinity : Double(le) ?? .infinity, sample.value)
        }.sorted { $0.bound < $1.bound }
    }

    /// The `q` quantile, interpolated within its bucket as Prometheus's
    /// `histogram_quantile` does; nil when the histogram counted nothing.
    static func quantile(_ q: Double, _ buckets: [(bound: Double, count: Double)]) -> Double? {
        guard let total = buckets.last?.count, total > 0 else { return nil }
        let rank = q * total
        var lower = 0.0, below = 0.0
        for bucket in buckets {
            if bucket.count >= rank {
                guard bucket.bound.isFinite else { return lower }
                let inBucket = bucket.count - below
                return inBucket > 0 ? lower + (bucket.bound - lower) * (rank - below) / inBucket : bucket.bound
            }
            lower = bucket.bound.isFinite ? bucket.bound : lower
            below = bucket.count
        }
        return lower
    }

    // MARK: text

    static func duration(_ seconds: Double?) -> String {
        guard let seconds else { return "-" }
        if seconds < 0.001 { return fixed(seconds * 1_000_000, 0) + "µs" }
        if seconds < 1 { return fixed(seconds * 1000, 1) + "ms" }
        return fixed(seconds, 2) + "s"
    }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (value * scale).rounded()
        let whole = Int64(scaled / scale)
        let fraction = Int64(abs(scaled.truncatingRemainder(dividingBy: scale)))
        guard digits > 0 else { return String(whole) }
        let text = String(fraction)
        return "\(whole).\(String(repeating: "0", count: digits - text.count))\(text)"
    }

    static func count(_ value: Double) -> String { String(Int64(value.rounded())) }

    static func sandbox(_ row: TopRow) -> String {
        guard row.sandboxed || row.violations > 0 else { return row.plugin.hasPrefix("(") ? "-" : "off" }
        let state = row.sandboxed ? "on" : "off"
        return row.violations > 0 ? "\(state), \(count(row.violations)) violation\(row.violations == 1 ? "" : "s")" : state
    }

    static let header = ["PLUG-IN", "REQ/S", "TOTAL", "P50", "P99", "ERRORS", "RESTARTS", "STATE", "SANDBOX"]

    /// A row's texts, as shown: the plug-in's name, a label of the
    /// server's, escaped.
    static func cells(_ row: TopRow) -> [String] {
        [PrintableText.escaping(row.plugin), fixed(row.perSecond, 1), count(row.total), duration(row.p50), duration(row.p99), count(row.errors),
         count(row.restarts), row.quarantined ? "quarantined" : "ok", sandbox(row)]
    }

    /// The table, columns padded, the name left and numbers right.
    static func lines(_ rows: [TopRow], width: Int) -> [String] {
        let table = [header] + rows.map(cells)
        var widths = header.map(\.count)
        for line in table { for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) } }
        widths[0] = min(widths[0], 32)
        return table.map { line in
            var text = ""
            for (index, cell) in line.enumerated() {
                let shown = cell.count > widths[index] ? String(cell.prefix(widths[index] - 1)) + "…" : cell
                let pad = String(repeating: " ", count: widths[index] - shown.count)
                if index > 0 { text += "  " }
                text += index == 0 || index >= 7 ? shown + pad : pad + shown
            }
            while text.hasSuffix(" ") { text.removeLast() }
            return String(text.prefix(width))
        }
    }

    /// One plain line per plug-in, for a stdout that is no terminal.
    static func plainLine(_ row: TopRow, time: String) -> String {
        "\(time) plugin=\(PrintableText.escaping(row.plugin).replacingSpaces) rate=\(fixed(row.perSecond, 1)) total=\(count(row.total)) p50=\(duration(row.p50)) p99=\(duration(row.p99)) errors=\(count(row.errors)) restarts=\(count(row.restarts)) state=\(row.quarantined ? "quarantined" : "ok") sandbox=\(sandbox(row).replacingSpaces)"
    }
}

extension String {
    fileprivate var replacingSpaces: String { String(map { $0 == " " ? "_" : $0 }) }
}
