/// How many typos apart two texts are: inserts, deletes, replaces and
/// swaps of two neighbours (the optimal string alignment distance), for the
/// "did you mean" of a missed route and of an unknown command. A value keeps
/// its rows from one comparison to the next, so a scan of many candidates
/// allocates them once.
public struct EditDistance {
    private var rows: ([Int], [Int], [Int]) = ([], [], [])

    public init() {}

    /// The distance between `a` and `b`, or nil when it is more than `limit`
    /// (the rows stop as soon as every entry is past it).
    public mutating func between<Element: Equatable>(_ a: [Element], _ b: [Element], atMost limit: Int) -> Int? {
        guard limit >= 0, abs(a.count - b.count) <= limit else { return nil }
        // Taken out, so each row is the only reference to its storage.
        var (beforePrevious, previous, current) = rows
        rows = ([], [], [])
        defer { rows = (beforePrevious, previous, current) }
        func reset(_ row: inout [Int]) {
            row.removeAll(keepingCapacity: true)
            row.append(contentsOf: repeatElement(0, count: b.count + 1))
        }
        reset(&beforePrevious)
        reset(&previous)
        reset(&current)
        for j in 0...b.count { previous[j] = j }
        for i in a.indices {
            current[0] = i + 1
            var rowMinimum = current[0]
            for j in b.indices {
                var best = min(previous[j] + (a[i] == b[j] ? 0 : 1), previous[j + 1] + 1, current[j] + 1)
                if i > 0, j > 0, a[i] == b[j - 1], a[i - 1] == b[j] { best = min(best, beforePrevious[j - 1] + 1) }
                current[j + 1] = best
                rowMinimum = min(rowMinimum, best)
            }
            // A swap reaches back one row more, but never below this one's
            // minimum: a row past the limit ends the search.
            guard rowMinimum <= limit else { return nil }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        let distance = previous[b.count]
        return distance <= limit ? distance : nil
    }

    /// `between` with rows of its own.
    public static func between<Element: Equatable>(_ a: [Element], _ b: [Element], atMost limit: Int) -> Int? {
        var distance = EditDistance()
        return distance.between(a, b, atMost: limit)
    }
}
