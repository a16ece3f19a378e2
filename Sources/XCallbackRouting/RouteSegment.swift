/// One segment of a route pattern alternative.
///
/// A pattern's first segment stands for the URL host and the rest for its path
/// segments, so `myapp://alert/show` is `[.literal("alert"), .literal("show")]`.
public enum RouteSegment: Hashable, Sendable, CustomStringConvertible {
    /// Matches exactly these bytes (case-sensitive, no Unicode normalisation;
    /// compared with the decoded segment).
    case literal(String)
    /// `:name`: matches any one non-empty segment and binds it to `name`.
    case argument(String)
    /// `*`: the last segment only; matches zero or more remaining segments,
    /// bound under the name `"*"` as those segments joined with `/`.
    case wildcard

    /// Segments are equal when they are the same kind with the same bytes
    /// (see `ByteExactText`): `é` and `e\u{301}` are different literals.
    public static func == (lhs: RouteSegment, rhs: RouteSegment) -> Bool {
        switch (lhs, rhs) {
        case let (.literal(a), .literal(b)), let (.argument(a), .argument(b)): ByteExactText(a) == ByteExactText(b)
        case (.wildcard, .wildcard): true
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .literal(let text):
            hasher.combine(0)
            hasher.combine(ByteExactText(text))
        case .argument(let name):
            hasher.combine(1)
            hasher.combine(ByteExactText(name))
        case .wildcard:
            hasher.combine(2)
        }
    }

    /// The name the wildcard's value is bound under.
    public static let wildcardName = "*"

    /// The segment as it would be written in a pattern (literals are not re-escaped).
    public var description: String {
        switch self {
        case .literal(let text): text
        case .argument(let name): ":" + name
        case .wildcard: "*"
        }
    }
}
