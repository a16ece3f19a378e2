import XCallbackRouting

/// Properties of route patterns and the route table (the `route-matcher` fuzz target).
///
/// Each input line is tried as a pattern and as a request (`scheme://host/a/b`, split
/// on `/` with empty segments kept, each segment percent-decoded when it decodes).
///
/// 1. A pattern either fails with an offset inside its text and a message naming it,
///    or parses to well-formed alternatives (wildcard last, longest first, arguments
///    unique, `argumentNames` complete), each of which, written back as a pattern,
///    parses to exactly itself.
/// 2. `insert` reports the routes of the same shape that a brute-force comparison finds,
///    and `sameShapeRoutes(as:)` said the same before the insertion.
/// 3. For every request, and for requests generated from every alternative of every
///    pattern, `matches` yields exactly the routes a brute-force matcher finds, in the
///    documented precedence order, with the same bound arguments, byte for byte;
///    `firstMatch` is the first of them. A request generated from a pattern with
///    non-empty argument values is matched by that pattern.
/// 4. After `removeAll(where:)`, the same holds for the routes that remain.
enum RouteMatcherProperties {
    /// Bounds the work per input: every pattern can expand to 256 alternatives.
    static let maximumLines = 10
    static let alternativesTriedPerPattern = 2

    static func check(_ input: UnsafeBufferPointer<UInt8>) throws(PropertyViolation) {
        let lines = lines(of: input).prefix(maximumLines).map { text($0) }

        var patterns: [RoutePattern] = []
        for line in lines {
            if let pattern = try checkPattern(line) { patterns.append(pattern) }
        }

        var table = RouteTable<Int>()
        var registered: [(pattern: RoutePattern, value: Int)] = []
        let shapes = patterns.map { Set($0.alternatives.map { key($0, withNames: false) }) }
        for (index, pattern) in patterns.enumerated() {
            let expected = registered.filter { other in
                sameBytes(other.pattern.scheme, pattern.scheme) && !shapes[other.value].isDisjoint(with: shapes[index])
            }.map(\.pattern.text)
            let before = table.sameShapeRoutes(as: pattern).map(\.text)
            let reported = table.insert(pattern, value: index).map(\.text)
            try require(reported.elementsEqual(expected, by: sameBytes), "insert reports the routes of the same shape",
                        "\(shown(pattern.text)): reported \(reported.map(shown)), expected \(expected.map(shown))")
            try require(before.elementsEqual(reported, by: sameBytes), "sameShapeRoutes agrees with insert",
                        "\(before.map(shown)) versus \(reported.map(shown))")
            registered.append((pattern, index))
        }
        try require(table.count == registered.count, "count is the number of routes inserted")

        var requests = lines.compactMap(request(from:))
        let pool = requests.flatMap { [$0.host] + $0.path } + ["1"]
        var generated: [(request: Request, route: Int)] = []
        var poolIndex = 0
        for (routeIndex, pattern) in patterns.enumerated() {
            // The longest alternatives and the shortest.
            let alternatives = pattern.alternatives.count <= alternativesTriedPerPattern
                ? pattern.alternatives
                : Array(pattern.alternatives.prefix(alternativesTriedPerPattern - 1) + pattern.alternatives.suffix(1))
            for (alternativeIndex, alternative) in alternatives.enumerated() {
                let uppercaseScheme = (routeIndex + alternativeIndex) % 2 == 1
                var request = Request(scheme: uppercaseScheme ? pattern.scheme.uppercased() : pattern.scheme, host: "", path: [])
                var segments: [String] = []
                var argumentsAreNonEmpty = true
                for segment in alternative {
                    switch segment {
                    case .literal(let text):
                        segments.append(text)
                    case .argument:
                        let value = pool[poolIndex % pool.count]
                        poolIndex += 1
                        argumentsAreNonEmpty = argumentsAreNonEmpty && !value.isEmpty
                        segments.append(value)
                    case .wildcard:
                        for _ in 0..<((routeIndex + alternativeIndex) % 3) {
                            segments.append(pool[poolIndex % pool.count])
                            poolIndex += 1
                        }
                    }
                }
                request.host = segments.first ?? ""
                request.path = Array(segments.dropFirst())
                requests.append(request)
                if argumentsAreNonEmpty { generated.append((request, routeIndex)) }
            }
        }

        for request in requests {
            try checkLookup(request, in: table, routes: registered)
        }
        for (request, route) in generated {
            let candidates = table.matches(scheme: request.scheme, host: request.host, path: request.path).map(\.value)
            try require(candidates.contains(route), "a request generated from a pattern matches it",
                        "\(request) from \(shown(patterns[route].text)): candidates \(candidates)")
        }

        let removed = table.removeAll { $0 % 2 == 1 }
        registered.removeAll { $0.value % 2 == 1 }
        try require(removed == patterns.count / 2, "removeAll reports how many routes it removed",
                    "\(removed) of \(patterns.count)")
        try require(table.routes.map(\.value) == registered.map(\.value), "routes keep registration order after removal")
        for request in requests {
            try checkLookup(request, in: table, routes: registered)
        }
    }

    // MARK: Patterns

    private static func checkPattern(_ text: String) throws(PropertyViolation) -> RoutePattern? {
        let pattern: RoutePattern
        do {
            pattern = try RoutePattern(text)
        } catch {
            try require(error.offset >= 0 && error.offset <= text.utf8.count, "a pattern error lies inside the pattern",
                        "offset \(error.offset) in \(shown(text))")
            try require(error.message.hasSuffix("at byte \(error.offset)"), "a pattern error message names its offset",
                        shown(error.message))
            try require(sameBytes(error.pattern, text), "a pattern error carries the pattern")
            return nil
        }
        let prefix = text.utf8.prefix { $0 != UInt8(ascii: ":") }
        try require(pattern.scheme.utf8.elementsEqual(prefix.map(asciiLowercased)), "a pattern's scheme is its prefix, lowercased",
                    "\(shown(pattern.scheme)) from \(shown(text))")
        let alternatives = pattern.alternatives
        try require(!alternatives.isEmpty && alternatives.count <= 256, "a pattern has 1 to 256 alternatives",
                    "\(alternatives.count) for \(shown(text))")
        var names: [String] = []
        for (index, alternative) in alternatives.enumerated() {
            try require(!alternative.isEmpty, "an alternative has a host segment", shown(text))
            if index > 0 {
                try require(alternatives[index - 1].count >= alternative.count, "alternatives come longest first", shown(text))
            }
            for (position, segment) in alternative.enumerated() {
                switch segment {
                case .wildcard:
                    try require(position == alternative.count - 1, "a wildcard ends its alternative", shown(text))
                case .argument(let name):
                    try require(!name.isEmpty && name.utf8.allSatisfy(isNameByte), "argument names are letters, digits, _ and -",
                                shown(name))
                    if !names.contains(name) { names.append(name) }
                case .literal(let literal):
                    // Only the scheme's root route (`scheme://` alone) has an empty one: its host.
                    let isRoot = text.utf8.count == prefix.count + 3 && alternatives == [[.literal("")]]
                    try require(!literal.isEmpty || isRoot, "a literal is empty only in a scheme's root route", shown(text))
                }
            }
            let argumentNames = alternative.compactMap { segment -> String? in
                if case .argument(let name) = segment { return name }
                return nil
            }
            try require(Set(argumentNames).count == argumentNames.count, "argument names are unique", shown(text))
        }
        try require(Set(alternatives.map { key($0, withNames: true) }).count == alternatives.count, "alternatives are distinct",
                    shown(text))
        let hasWildcard = alternatives.contains { $0.last == .wildcard }
        let expectedNames = alternatives[0].compactMap { segment -> String? in
            if case .argument(let name) = segment { return name }
            return nil
        } + (hasWildcard ? [RouteSegment.wildcardName] : [])
        try require(pattern.argumentNames == expectedNames && Set(names).isSubset(of: expectedNames),
                    "argumentNames lists the longest alternative's arguments, then '*'",
                    "\(pattern.argumentNames) for \(shown(text))")

        // Written back: the longest alternative and the shortest (a pattern can have 256).
        for alternative in alternatives.prefix(1) + alternatives.suffix(alternatives.count > 1 ? 1 : 0) {
            let written = pattern.scheme + "://" + alternative.map(written).joined(separator: "/")
            let reparsed: RoutePattern
            do {
                reparsed = try RoutePattern(written)
            } catch {
                throw PropertyViolation(property: "an alternative written as a pattern parses",
                                        detail: "\(shown(written)) from \(shown(text)): \(error.message)")
            }
            try require(reparsed.alternatives.count == 1
                        && key(reparsed.alternatives[0], withNames: true) == key(alternative, withNames: true),
                        "an alternative written as a pattern parses to itself",
                        "\(shown(written)) gives \(reparsed.alternatives)")
        }
        return pattern
    }

    /// A segment as pattern text, every byte but the unreserved ones escaped in literals.
    private static func written(_ segment: RouteSegment) -> String {
        switch segment {
        case .wildcard: return "*"
        case .argument(let name): return ":" + name
        case .literal(let literal):
            var output = ""
            for byte in literal.utf8 {
                if isNameByte(byte) && byte != UInt8(ascii: "-") || "-._~".utf8.contains(byte) {
                    output.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    let digits = Array("0123456789ABCDEF".unicodeScalars)
                    output.unicodeScalars.append("%")
                    output.unicodeScalars.append(digits[Int(byte >> 4)])
                    output.unicodeScalars.append(digits[Int(byte & 15)])
                }
            }
            return output
        }
    }

    // MARK: Shapes

    /// An alternative as bytes that are equal exactly when the alternatives are: the kind
    /// of each segment, and a literal's bytes (length first, as a literal may hold any
    /// byte). Without names, equal keys mean "the same shape", the table's notion of a clash.
    private static func key(_ alternative: [RouteSegment], withNames: Bool) -> [UInt8] {
        var key: [UInt8] = []
        func append(_ text: String) {
            let count = text.utf8.count
            key += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: count >> $0) }
            key += text.utf8
        }
        for segment in alternative {
            switch segment {
            case .literal(let text):
                key.append(1)
                append(text)
            case .argument(let name):
                key.append(2)
                if withNames { append(name) }
            case .wildcard:
                key.append(3)
            }
        }
        return key
    }

    // MARK: Lookup

    struct Request: CustomStringConvertible {
        var scheme: String
        var host: String
        var path: [String]

        var description: String { "\(shown(scheme)) \(shown(host)) \(path.map(shown))" }
    }

    /// `scheme://host/a/b` as the URL parser would hand it over: segments split on '/',
    /// empty ones kept (the table must cope), each decoded when it decodes. Schemes
    /// reach the table from the URL parser, so only its scheme characters are tried.
    private static func request(from line: String) -> Request? {
        let bytes = Array(line.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              bytes[colon...].starts(with: "://".utf8),
              bytes[..<colon].allSatisfy({ isNameByte($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: ".") })
        else { return nil }
        let rest = Array(bytes[(colon + 3)...])
        let segments = rest.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { raw -> String in
            let raw = Array(raw)
            switch ReferenceDecoding.percentDecode(raw, 0..<raw.count, rejectingNUL: true) {
            case .success(let decoded): return text(decoded)
            case .failure: return text(raw)
            }
        }
        return Request(scheme: text(bytes[..<colon]), host: segments[0], path: Array(segments.dropFirst()))
    }

    private struct Expected {
        var route: Int
        var pattern: String
        var key: [Int]
        var arguments: [(name: String, value: String)]
    }

    /// Every route that matches `request`, in precedence order, found by trying each
    /// alternative of each route in turn. A route's rank is the best rank of its matching
    /// alternatives: segment kinds left to right (literal 0, argument 1, wildcard 2; an
    /// alternative that ends with the request ranks before a wildcard matching nothing),
    /// compared lexicographically; ties go to the earlier route, then the earlier alternative.
    private static func bruteForce(_ request: Request, _ routes: [(pattern: RoutePattern, value: Int)]) -> [Expected] {
        let segments = [request.host] + request.path
        // Literals compare with the host ASCII-lowercased (RFC 3986: it is case-insensitive);
        // an argument takes it as spelled.
        let keys = [String(decoding: request.host.utf8.map(asciiLowercased), as: UTF8.self)] + request.path
        var found: [Expected] = []
        for (pattern, value) in routes where pattern.scheme.utf8.elementsEqual(request.scheme.utf8.map(asciiLowercased)) {
            var best: Expected?
            alternatives: for alternative in pattern.alternatives {
                // Cheap rejections first: most alternatives do not fit the request at all.
                let endsInWildcard = alternative.last == .wildcard
                guard endsInWildcard ? alternative.count - 1 <= segments.count : alternative.count == segments.count,
                      alternative.indices.allSatisfy({ position in
                          switch alternative[position] {
                          case .literal(let literal): return sameBytes(literal, keys[position])
                          case .argument: return !segments[position].isEmpty
                          case .wildcard: return true
                          }
                      })
                else { continue alternatives }
                var key: [Int] = []
                var arguments: [(name: String, value: String)] = []
                for (position, segment) in alternative.enumerated() {
                    switch segment {
                    case .literal(let literal):
                        guard position < segments.count, sameBytes(literal, keys[position]) else { continue alternatives }
                        key.append(0)
                    case .argument(let name):
                        guard position < segments.count, !segments[position].isEmpty else { continue alternatives }
                        key.append(1)
                        arguments.append((name, segments[position]))
                    case .wildcard:
                        guard position <= segments.count else { continue alternatives }
                        key.append(2)
                        arguments.append((RouteSegment.wildcardName, segments[position...].joined(separator: "/")))
                    }
                }
                if alternative.last != .wildcard && alternative.count != segments.count { continue alternatives }
                if best == nil || key.lexicographicallyPrecedes(best!.key) {
                    best = Expected(route: value, pattern: pattern.text, key: key, arguments: arguments)
                }
            }
            if let best { found.append(best) }
        }
        // Routes are in registration order, so a stable sort by rank leaves ties in that order.
        return found.enumerated().sorted { a, b in
            a.element.key != b.element.key ? a.element.key.lexicographicallyPrecedes(b.element.key) : a.offset < b.offset
        }.map(\.element)
    }

    private static func checkLookup(
        _ request: Request, in table: RouteTable<Int>, routes: [(pattern: RoutePattern, value: Int)]
    ) throws(PropertyViolation) {
        let expected = bruteForce(request, routes)
        let actual = Array(table.matches(scheme: request.scheme, host: request.host, path: request.path))
        try require(actual.map(\.value) == expected.map(\.route), "matches yields the brute-force candidates in precedence order",
                    "\(request): got \(actual.map { shown($0.pattern.text) }), expected \(expected.map { shown($0.pattern) })")
        for (match, expected) in zip(actual, expected) {
            try require(sameBytes(match.pattern.text, expected.pattern), "a match names its route's pattern")
            try require(match.arguments.elementsEqual(expected.arguments) { sameBytes($0.name, $1.name) && sameBytes($0.value, $1.value) },
                        "a match binds the arguments of its best alternative",
                        "\(request) with \(shown(expected.pattern)): got \(match.arguments), expected \(expected.arguments)")
        }
        let first = table.firstMatch(scheme: request.scheme, host: request.host, path: request.path)
        try require(first?.value == expected.first?.route, "firstMatch is the first candidate",
                    "\(request): \(String(describing: first?.pattern.text)) versus \(String(describing: expected.first?.pattern))")
        if let first, let expected = expected.first {
            try require(first.arguments.elementsEqual(expected.arguments) { sameBytes($0.name, $1.name) && sameBytes($0.value, $1.value) },
                        "firstMatch binds the arguments matches does", "\(request)")
        }

        // The fast lane's index finds a route exactly when the first match is
        // all literals. Its keys end each part with a NUL, which no request
        // the host routes holds (the parsers refuse it, raw or escaped): a
        // host "b\0j" would read as host "b" and segment "j".
        let parts = [request.scheme, request.host] + request.path
        guard !parts.contains(where: { $0.utf8.contains(0) }) else { return }
        var key = Array(request.scheme.utf8.map(asciiLowercased)) + [0] + request.host.utf8.map(asciiLowercased) + [0]
        for segment in request.path { key += Array(segment.utf8) + [0] }
        let indexed = key.withUnsafeBufferPointer { table.literalIndex().route(forKey: $0) }.map { table.routes[$0].value }
        let literalFirst = expected.first.flatMap { $0.key.allSatisfy { $0 == 0 } ? $0.route : nil }
        try require(indexed == literalFirst, "the literal index finds the first match when it is all literals, and nothing else",
                    "\(request): index \(String(describing: indexed)), expected \(String(describing: literalFirst))")
    }

    // MARK: Bytes

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}
