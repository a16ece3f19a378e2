/// "Did you mean …": the registered route a request that matched none
/// probably meant, when one is a typo or two away (`NotFoundAction`).
extension RouteTable {
    /// The route nearest to the request, counting edits (insert, delete,
    /// replace a character) between the request and the route as it would
    /// be written for it: an `:argument` stands for the request's segment in
    /// its place and `*` for the rest, so only literals count. Nil when none
    /// is within `maxEdits(forLength:)`, or the request is long (a flood of
    /// long bad lines must not cost a scan each). Ties go to the route
    /// registered first.
    public func nearestRoute(scheme: String, host: String, path: [String]) -> RoutePattern? {
        let request = Array(Self.written(scheme: NearestRoute.lowercased(scheme), segments: [NearestRoute.lowercased(host)] + path).utf8)
        guard request.count <= NearestRoute.maxRequestBytes else { return nil }
        let limit = NearestRoute.maxEdits(forLength: request.count)
        var best: (pattern: RoutePattern, edits: Int)?
        for route in storage.prefix(NearestRoute.maxCandidates) {
            let pattern = route.pattern
            for alternative in pattern.alternatives {
                let candidate = Array(Self.written(scheme: pattern.scheme,
                                                   segments: NearestRoute.fill(alternative, with: [host] + path)).utf8)
                let bound = min(limit, (best?.edits ?? limit + 1) - 1)
                if let edits = NearestRoute.edits(request, candidate, atMost: bound), edits > 0 {
                    best = (pattern, edits)
                }
            }
        }
        return best?.pattern
    }

    private static func written(scheme: String, segments: [String]) -> String {
        scheme + "://" + segments.joined(separator: "/")
    }
}

/// The pieces of `nearestRoute`, testable on their own.
enum NearestRoute {
    /// Requests longer than this get no suggestion.
    static let maxRequestBytes = 512
    /// Routes past this many (in registration order) are not compared.
    static let maxCandidates = 4096

    /// Scheme and host match case-insensitively, so they are compared so.
    static func lowercased(_ text: String) -> String { text.lowercased() }

    /// One typo in a short request, up to three in a long one: further
    /// than that, a suggestion is more likely noise than help.
    static func maxEdits(forLength length: Int) -> Int { min(3, max(1, length / 10)) }

    /// The segments of `alternative` as a request would spell them: the
    /// request's own segment where the route has an argument, the rest of
    /// the request for a wildcard. The host is lowercased, as it is matched.
    static func fill(_ alternative: [RouteSegment], with request: [String]) -> [String] {
        var segments: [String] = []
        for (index, segment) in alternative.enumerated() {
            switch segment {
            case .literal(let text): segments.append(index == 0 ? lowercased(text) : text)
            case .argument(let name):
                let given = index < request.count ? request[index] : ""
                segments.append(given.isEmpty ? ":" + name : (index == 0 ? lowercased(given) : given))
            case .wildcard:
                segments.append(contentsOf: request.dropFirst(index))
            }
        }
        return segments
    }

    /// The edit distance between `a` and `b` (insert, delete, replace, or
    /// swap two neighbours: the typos hands make), or nil when it is more
    /// than `limit` (the rows stop as soon as every entry is past it).
    static func edits(_ a: [UInt8], _ b: [UInt8], atMost limit: Int) -> Int? {
        guard limit >= 0, abs(a.count - b.count) <= limit else { return nil }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in a.indices {
            current[0] = i + 1
            var rowMinimum = current[0]
            for j in b.indices {
                var best = min(previous[j] + (a[i] == b[j] ? 0 : 1), previous[j + 1] + 1, current[j] + 1)
                if i > 0, j > 0, a[i] == b[j - 1], a[i - 1] == b[j] { best = min(best, beforePrevious[j - 1] + 1) }
                current[j + 1] = best
                rowMinimum = min(rowMinimum, best)
            }
            guard rowMinimum <= limit else { return nil }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        let distance = previous[b.count]
        return distance <= limit ? distance : nil
    }
}
