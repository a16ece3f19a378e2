/// "Did you mean …": the registered route a request that matched none
/// probably meant, when one is a typo or two away (`NotFoundAction`).
extension RouteTable {
    /// The route nearest to the request, counting edits (insert, delete,
    /// replace a character, swap two neighbours) between the request and the
    /// route as it would be written for it: an `:argument` stands for the
    /// request's segment in its place and `*` for the rest, so only literals
    /// count. Nil when none is within `maxEdits(forLength:)`. Ties go to the
    /// route registered first.
    ///
    /// Only routes of the request's scheme are compared, or, when no route
    /// has it, of the schemes a typo away from it; at most `maxCandidates` of
    /// them, and no request longer than `maxRequestBytes`: a flood of bad
    /// lines must not cost a scan of a large table each.
    public func nearestRoute(scheme: String, host: String, path: [String]) -> RoutePattern? {
        let wantedScheme = Self.lowercased(scheme)
        let request = Array(NearestRoute.written(scheme: wantedScheme, segments: [Self.lowercased(host)] + path).utf8)
        guard request.count <= NearestRoute.maxRequestBytes else { return nil }
        let limit = NearestRoute.maxEdits(forLength: request.count)
        var schemes: Set<String> = [wantedScheme]
        if trie.roots[wantedScheme] == nil {
            let wanted = Array(wantedScheme.utf8)
            schemes = Set(trie.roots.keys.filter { EditDistance.between(wanted, Array($0.utf8), atMost: limit) != nil })
            if schemes.isEmpty { return nil }
        }
        var best: (pattern: RoutePattern, edits: Int)?
        var distance = EditDistance()
        var compared = 0
        for route in storage where schemes.contains(route.pattern.scheme) {
            compared += 1
            if compared > NearestRoute.maxCandidates { break }
            for alternative in route.pattern.alternatives {
                let candidate = Array(NearestRoute.written(scheme: route.pattern.scheme,
                                                           segments: NearestRoute.fill(alternative, with: [host] + path)).utf8)
                let bound = min(limit, (best?.edits ?? limit + 1) - 1)
                if let edits = distance.between(request, candidate, atMost: bound), edits > 0 {
                    best = (route.pattern, edits)
                }
            }
        }
        return best?.pattern
    }
}

/// The pieces of `nearestRoute`, testable on their own.
enum NearestRoute {
    /// Requests longer than this get no suggestion.
    static let maxRequestBytes = 512
    /// Routes past this many (in registration order) are not compared.
    static let maxCandidates = 1024

    static func written(scheme: String, segments: [String]) -> String {
        scheme + "://" + segments.joined(separator: "/")
    }


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
            case .literal(let text): segments.append(index == 0 ? RouteTable<Int>.lowercased(text) : text)
            case .argument(let name):
                let given = index < request.count ? request[index] : ""
                segments.append(given.isEmpty ? ":" + name : (index == 0 ? RouteTable<Int>.lowercased(given) : given))
            case .wildcard:
                segments.append(contentsOf: request.dropFirst(index))
            }
        }
        return segments
    }
}
