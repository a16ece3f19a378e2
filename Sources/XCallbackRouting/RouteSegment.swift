/// One segment of a route pattern alternative.
///
/// A pattern's first segment stands for the URL host and the rest for its path
/// segments, so `myapp://alert/show` is `[.literal("alert"), .literal("show")]`.
public enum RouteSegment: Hashable, Sendable, CustomStringConvertible {
    /// Matches exactly this text (case-sensitive; compared with the decoded segment).
    case literal(String)
    /// `:name`: matches any one non-empty segment and binds it to `name`.
    case argument(String)
    /// `*`: the last segment only; matches zero or more remaining segments,
    /// bound under the name `"*"` as those segments joined with `/`.
    case wildcard

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
