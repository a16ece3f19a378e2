import Testing
@testable import XCallbackRouting

/// A large generated table checked against a brute-force reference of the precedence rules.
@Suite struct RouteTableScaleTests {
    /// SplitMix64: deterministic, so a failure reproduces.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// 9,000 distinct routes of the three forms, plus 1,000 random overlapping patterns
    /// over a small alphabet so that precedence and same-shape ordering get exercised.
    static func generatedPatterns() -> [String] {
        var patterns: [String] = []
        for index in 0..<3000 {
            patterns.append("app\(index % 7)://x-callback-url/action\(index)")
            patterns.append("ctl://controller\(index % 100)/action\(index)")
            patterns.append("items://kind\(index)/:id")
        }
        var random = Generator(state: 42)
        let literals = ["p", "q", "r"]
        for _ in 0..<1000 {
            var text = "mix://"
            var argument = 0
            func segment(last: Bool) -> String {
                let roll = Int.random(in: 0..<10, using: &random)
                if roll < 5 { return literals.randomElement(using: &random)! }
                if roll < 8 || !last { argument += 1; return ":a\(argument)" }
                return "*"
            }
            let length = Int.random(in: 0...3, using: &random)
            text += segment(last: length == 0)
            for position in 0..<length { text += "/" + segment(last: position == length - 1) }
            if !text.hasSuffix("*"), Bool.random(using: &random) {
                text += "(/" + segment(last: false) + "(/" + segment(last: true) + "))"
            }
            patterns.append(text)
        }
        return patterns
    }

    /// The precedence rules spelled out naively: rank each position (literal 0, exact end 0,
    /// argument 1, wildcard 2), compare left to right, then registration order; a route
    /// appears once, with its best alternative.
    static func reference(_ patterns: [(Int, RoutePattern)], segments: [String]) -> [(Int, [String])] {
        var found: [(key: [Int], route: Int, arguments: [String])] = []
        for (route, pattern) in patterns {
            var best: (key: [Int], arguments: [String])?
            alternatives: for alternative in pattern.alternatives {
                var key: [Int] = []
                var arguments: [String] = []
                for (position, segment) in alternative.enumerated() {
                    switch segment {
                    case .literal(let text):
                        guard position < segments.count, segments[position] == text else { continue alternatives }
                        key.append(0)
                    case .argument(let name):
                        guard position < segments.count, !segments[position].isEmpty else { continue alternatives }
                        key.append(1)
                        arguments.append("\(name)=\(segments[position])")
                    case .wildcard:
                        guard position <= segments.count else { continue alternatives }
                        key.append(2)
                        arguments.append("*=" + segments[position...].joined(separator: "/"))
                    }
                }
                if alternative.last != .wildcard {
                    guard alternative.count == segments.count else { continue }
                    key.append(0)
                }
                if best == nil || key.lexicographicallyPrecedes(best!.key) { best = (key, arguments) }
            }
            if let best { found.append((best.key, route, best.arguments)) }
        }
        found.sort { $0.key != $1.key ? $0.key.lexicographicallyPrecedes($1.key) : $0.route < $1.route }
        return found.map { ($0.route, $0.arguments) }
    }

    @Test func tenThousandRoutesMatchLikeTheReference() throws {
        let texts = Self.generatedPatterns()
        let patterns = try texts.map { try RoutePattern($0) }
        var table = RouteTable<Int>()
        var byScheme: [String: [(Int, RoutePattern)]] = [:]
        for (index, pattern) in patterns.enumerated() {
            table.insert(pattern, value: index)
            byScheme[pattern.scheme, default: []].append((index, pattern))
        }
        #expect(table.count == 10_000)

        var random = Generator(state: 7)
        var requests: [(String, String, [String])] = [
            ("app3", "x-callback-url", ["action10"]),
            ("APP3", "x-callback-url", ["action2999"]),
            ("app4", "x-callback-url", ["action10"]),  // wrong scheme for that action: miss
            ("ctl", "controller10", ["action110"]),
            ("ctl", "controller11", ["action110"]),  // miss
            ("items", "kind2500", ["25"]),
            ("items", "kind2500", []),  // miss
            ("nope", "x", []),
        ]
        let alphabet = ["p", "q", "r", "s", ""]
        for _ in 0..<300 {
            let host = alphabet.randomElement(using: &random)!
            let path = (0..<Int.random(in: 0...4, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            requests.append(("mix", host, path))
        }
        for _ in 0..<100 {
            let index = Int.random(in: 0..<3000, using: &random)
            requests.append(("app\(index % 7)", "x-callback-url", ["action\(index)"]))
            requests.append(("items", "kind\(index)", ["\(index * 3)"]))
        }

        var hits = 0
        for (scheme, host, path) in requests {
            let expected = Self.reference(byScheme[scheme.lowercased()] ?? [], segments: [host] + path)
            let actual = table.matches(scheme: scheme, host: host, path: path).map { ($0.value, bound($0)) }
            let label = "\(scheme)://\(([host] + path).joined(separator: "/"))"
            #expect(actual.map(\.0) == expected.map(\.0), "\(label)")
            #expect(actual.map(\.1) == expected.map(\.1), "\(label)")
            let first = table.firstMatch(scheme: scheme, host: host, path: path)
            #expect(first?.value == expected.first?.0, "\(label)")
            if first != nil { hits += 1 }
        }
        // The sample must exercise real matches, not just misses.
        #expect(hits > 300)
    }

    @Test func bindingsAreCorrectAmongManyRoutes() throws {
        var table = RouteTable<Int>()
        for index in 0..<10_000 {
            table.insert(try RoutePattern("items://kind\(index)/:id/*"), value: index)
        }
        let match = try #require(table.firstMatch(scheme: "items", host: "kind9999", path: ["42", "a", "b"]))
        #expect(match.value == 9999)
        #expect(bound(match) == ["id=42", "*=a/b"])
        #expect(table.firstMatch(scheme: "items", host: "kind10000", path: ["42"]) == nil)
    }
}
