/// A parsed route pattern such as `pokedex://pokemons/:pokedexID` or `a://b/c(/:x(/:y))`.
///
/// The URL host is the first segment and the path segments follow, so one model covers
/// x-callback-url actions, controller/action routes and free patterns alike. The scheme
/// and a literal host are compared case-insensitively (ASCII, RFC 3986); every other
/// segment is case-sensitive.
/// Literal segments may use `%XX` escapes; they are decoded and compared with the
/// (decoded) segments of the request.
///
/// Two patterns are equal when their texts are the same bytes.
public struct RoutePattern: Hashable, Sendable, CustomStringConvertible {
    /// The pattern as registered.
    public let text: String
    /// The scheme, lowercased.
    public let scheme: String
    /// Every `:name` in order of appearance (across optional groups), then `"*"` if the
    /// pattern has a wildcard.
    public let argumentNames: [String]
    /// The concrete segment lists the optional groups expand to: longest first, and among
    /// equal lengths, "group present" before "group absent", left to right. Without groups,
    /// exactly one alternative.
    public let alternatives: [[RouteSegment]]

    /// Parses `text`; throws a `RoutePatternError` naming the byte offset and what was expected.
    public init(_ text: String) throws(RoutePatternError) {
        var parser = RoutePatternParser(text)
        let result = try parser.parse()
        self.text = text
        self.scheme = result.scheme
        self.argumentNames = result.argumentNames
        self.alternatives = result.alternatives
    }

    /// `scheme://x-callback-url/action`; `action` must be one literal segment.
    public static func action(scheme: String, action: String) throws(RoutePatternError) -> RoutePattern {
        try fixed(scheme: scheme, host: "x-callback-url", action: action)
    }

    /// `scheme://controller/action`; both must be literal segments.
    public static func controllerAction(scheme: String, controller: String, action: String) throws(RoutePatternError) -> RoutePattern {
        try fixed(scheme: scheme, host: controller, action: action)
    }

    private static func fixed(scheme: String, host: String, action: String) throws(RoutePatternError) -> RoutePattern {
        let prefix = scheme + "://"
        let pattern = try RoutePattern(prefix + host + "/" + action)
        // Reject names that parse as something else (":id", "*", "a/b", "(...)"), since
        // these constructors promise a fixed route.
        let alternatives = pattern.alternatives
        if alternatives.count == 1, alternatives[0].count == 2,
           case .literal = alternatives[0][0], case .literal = alternatives[0][1] {
            return pattern
        }
        let hostIsLiteral = !host.utf8.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "(") || $0 == UInt8(ascii: ")") }
            && host.first != ":" && host != "*"
        if hostIsLiteral {
            throw notLiteral(pattern.text, offset: prefix.utf8.count + host.utf8.count + 1, "the action")
        }
        throw notLiteral(pattern.text, offset: prefix.utf8.count, "the controller")
    }

    private static func notLiteral(_ text: String, offset: Int, _ what: String) -> RoutePatternError {
        RoutePatternError(
            pattern: text, offset: offset, kind: .notASingleSegment,
            message: "\(what) must be one literal segment (no '/', ':name', '*' or groups) at byte \(offset)")
    }

    public var description: String { text }

    public static func == (lhs: RoutePattern, rhs: RoutePattern) -> Bool {
        ByteExactText(lhs.text) == ByteExactText(rhs.text)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(ByteExactText(text)) }
}
