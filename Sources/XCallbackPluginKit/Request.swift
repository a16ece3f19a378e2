import XCallbackURL

/// A request as a Swift handler sees it: plain values, copied out of the
/// host's memory, so a handler may keep it as long as it likes.
public struct Request: Sendable {
    /// The request line as received.
    public var url: String
    /// The scheme, lowercased.
    public var scheme: String
    /// `x-source`: the name of the calling program, if it gave one.
    public var source: String?
    /// Action parameters in order (x-callback parameters excluded).
    public var parameters: QueryParameters
    /// Route arguments by name (`:name`; `*` for a wildcard's remainder).
    public var arguments: [String: String]
    /// The pattern of the route that matched, as registered ("" from a host
    /// older than ABI 1.2).
    public var route: String
    /// The host's number for this request, the one its log lines carry (0
    /// from a host older than ABI 1.2).
    public var id: UInt64

    public init(url: String, scheme: String, source: String? = nil,
                parameters: QueryParameters = [], arguments: [String: String] = [:],
                route: String = "", id: UInt64 = 0) {
        self.url = url
        self.scheme = scheme
        self.source = source
        self.parameters = parameters
        self.arguments = arguments
        self.route = route
        self.id = id
    }

    /// A required parameter converted to `T`; a missing or malformed value
    /// throws `ParameterError`, which becomes a `ParameterError` outcome.
    public func parameter<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T {
        try parameters.required(name, as: type)
    }

    /// An optional parameter converted to `T`; nil when absent.
    public func optionalParameter<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T? {
        try parameters.optional(name, as: type)
    }

    /// A list parameter: `a,b,c` and/or repeated keys; empty when absent.
    public func list<T: ParameterValue>(_ name: String, of type: T.Type = T.self) throws(ParameterError) -> [T] {
        try parameters.list(name, of: type)
    }

    /// A route argument converted to `T`, Crossroad style.
    public func argument<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T {
        guard let text = arguments[name] else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .missing)
        }
        guard let value = T(parameterValue: text) else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .invalid(value: text))
        }
        return value
    }
}
