/// Why a route pattern was refused.
///
/// `offset` is the 0-based UTF-8 byte offset in `pattern` where the problem was found
/// (for ASCII patterns, the column); `message` says what was expected there, in words.
public struct RoutePatternError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem, for callers that react to it in code rather than show it.
    public enum Kind: Sendable, Equatable {
        case missingSchemeSeparator
        case emptyScheme
        case invalidSchemeCharacter
        case missingHost
        case emptySegment
        case invalidCharacter
        case malformedPercentEscape
        case emptyArgumentName
        case invalidArgumentName
        case duplicateArgumentName
        case misplacedWildcard
        case unbalancedParenthesis
        case emptyGroup
        case tooManyAlternatives
        case notASingleSegment
    }

    /// The pattern text as given.
    public var pattern: String
    /// 0-based UTF-8 byte offset in `pattern` where the problem is.
    public var offset: Int
    /// A sentence for a human; it ends with "at byte N".
    public var message: String
    public var kind: Kind

    public init(pattern: String, offset: Int, kind: Kind, message: String) {
        self.pattern = pattern
        self.offset = offset
        self.kind = kind
        self.message = message
    }

    public var description: String {
        "invalid route pattern '\(pattern)': \(message)"
    }
}
