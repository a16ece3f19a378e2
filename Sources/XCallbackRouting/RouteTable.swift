/// The routes of every plug-in, and the lookup that turns a request into candidates.
///
/// A pattern is a scheme plus segments, the URL host being the first segment, so
/// `calc://x-callback-url/add`, `myapp://alert/show` and `pokedex://pokemons/:id` all
/// live in one table. Lookup walks a trie per scheme and does not scan the routes.
///
/// Precedence: candidates are compared segment by segment from the left (the host
/// first). At the first position where they differ, a literal beats an `:argument`,
/// which beats the `*` wildcard; a route that ends exactly where the request ends beats
/// a wildcard that matches nothing there. So for `a://b/c/d`, `a://b/c/:x` beats
/// `a://b/:x/d` (they differ first at `c`), which beats `a://b/*`. Routes of the same
/// shape (the same literals, with arguments and a wildcard in the same places, whatever
/// the argument names) rank in registration order. Each alternative of an optional
/// group ranks on its own shape; a route is offered at most once per request, at its
/// best-ranking alternative.
///
/// Arguments match one non-empty segment only; an empty segment (as in `a://b//c`) is
/// matched by a literal never, and by a wildcard always.
///
/// The table does not refuse routes with the same shape, nor the same pattern twice:
/// that is the host's policy. `insert` reports them so the caller can refuse or warn.
public struct RouteTable<Value: Sendable>: Sendable {
    struct Route: Sendable {
        var pattern: RoutePattern
        var value: Value
    }

    /// Registration order; the trie refers to routes by their index here.
    private(set) var storage: [Route] = []
    private(set) var trie = RouteTrie()

    public init() {}

    /// The number of routes (patterns) registered.
    public var count: Int { storage.count }

    public var isEmpty: Bool { storage.isEmpty }

    /// Adds a route. Returns the patterns already in the table with the same shape as any
    /// alternative of `pattern`, in registration order (empty when none); the new route
    /// ranks after them.
    @discardableResult
    public mutating func insert(_ pattern: RoutePattern, value: Value) -> [RoutePattern] {
        let route = storage.count
        storage.append(Route(pattern: pattern, value: value))
        let sameShape = add(route)
        return sameShape.map { storage[$0].pattern }
    }

    /// Adds every alternative of the route at `route` to the trie; returns the indices of
    /// the routes that already had one of those shapes, in registration order.
    private mutating func add(_ route: Int) -> [Int] {
        let pattern = storage[route].pattern
        var sameShape: [Int] = []
        for (index, alternative) in pattern.alternatives.enumerated() {
            let ending = RouteTrie.Ending(route: route, alternative: index)
            for other in trie.insert(alternative, scheme: pattern.scheme, ending: ending) where !sameShape.contains(other) {
                sameShape.append(other)
            }
        }
        return sameShape.sorted()
    }

    /// The patterns already in the table with the same shape as any alternative of
    /// `pattern`, in registration order: what `insert` would report, for a host that
    /// wants to refuse a clash before adding anything.
    public func sameShapeRoutes(as pattern: RoutePattern) -> [RoutePattern] {
        var routes: [Int] = []
        for alternative in pattern.alternatives {
            for route in trie.routes(withShapeOf: alternative, scheme: pattern.scheme) where !routes.contains(route) {
                routes.append(route)
            }
        }
        return routes.sorted().map { storage[$0].pattern }
    }

    /// Removes every route whose value satisfies the predicate (e.g. all routes of one
    /// plug-in); returns how many were removed. The others keep their relative order.
    @discardableResult
    public mutating func removeAll(where shouldRemove: (Value) throws -> Bool) rethrows -> Int {
        let before = storage.count
        try storage.removeAll { try shouldRemove($0.value) }
        let removed = before - storage.count
        if removed > 0 {
            // Removal is rare (a plug-in unloads), so rebuilding beats keeping back-links.
            trie = RouteTrie()
            for route in storage.indices { _ = add(route) }
        }
        return removed
    }

    /// Every route, in registration order.
    public var routes: [(pattern: RoutePattern, value: Value)] {
        storage.map { ($0.pattern, $0.value) }
    }

    /// The values of the routes of `scheme` (compared case-insensitively), in
    /// registration order.
    public func values(ofScheme scheme: String) -> [Value] {
        let scheme = Self.lowercased(scheme)
        guard trie.roots[scheme] != nil else { return [] }
        return storage.compactMap { $0.pattern.scheme == scheme ? $0.value : nil }
    }

    /// Candidates for a request, best first, computed lazily as they are asked for.
    /// `scheme` and a literal `host` are compared case-insensitively (ASCII), `path` exactly;
    /// an argument bound to the host gets it as the request spelled it.
    public func matches(scheme: String, host: String, path: [String]) -> RouteMatches<Value> {
        RouteMatches(table: self, root: trie.roots[Self.lowercased(scheme)], host: host, path: path)
    }

    /// The best candidate, or nil when no route matches: the same as
    /// `matches(...).first`, without the iterator's bookkeeping.
    public func firstMatch(scheme: String, host: String, path: [String]) -> RouteMatch<Value>? {
        guard let root = trie.roots[Self.lowercased(scheme)],
              let ending = trie.firstEnding(root: root, host: host, path: path)
        else { return nil }
        return match(ending, host: host, path: path)
    }

    func hasSeveralAlternatives(_ route: Int) -> Bool {
        storage[route].pattern.alternatives.count > 1
    }

    /// Builds the match for an ending, binding arguments by replaying its alternative
    /// against the request: the search itself records nothing, so only the match
    /// returned pays for its argument array.
    func match(_ ending: RouteTrie.Ending, host: String, path: [String]) -> RouteMatch<Value> {
        let route = storage[ending.route]
        let segments = route.pattern.alternatives[ending.alternative]
        var arguments: [(name: String, value: String)] = []
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .literal:
                continue
            case .argument(let name):
                if arguments.isEmpty { arguments.reserveCapacity(route.pattern.argumentNames.count) }
                arguments.append((name, index == 0 ? host : path[index - 1]))
            case .wildcard:
                var rest = ""
                for position in index..<(path.count + 1) {
                    if position > index { rest += "/" }
                    rest += position == 0 ? host : path[position - 1]
                }
                arguments.append((RouteSegment.wildcardName, rest))
            }
        }
        return RouteMatch(pattern: route.pattern, value: route.value, arguments: arguments)
    }

    /// Schemes are ASCII and nearly always already lowercase: check before copying.
    /// (A literal host is compared the same way, and `nearestRoute` spells both so.)
    static func lowercased(_ scheme: String) -> String {
        for byte in scheme.utf8 where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") {
            return scheme.lowercased()
        }
        return scheme
    }
}
