import XCallbackURL

/// The fields of one request as the host hands them to a handler.
public struct RequestFields: Sendable, Equatable {
    public var url: String
    public var scheme: String
    public var source: String?
    public var parameters: [QueryParameter]
    /// Route arguments in pattern order (`:name` values, `*` remainder).
    public var arguments: [QueryParameter]
    /// The host's number for the request (`request_id`; 0: none given).
    public var id: UInt64
    /// Which attempt at running the request this is (`request_attempt`):
    /// 1 unless a durable queue hands out a request a host left unfinished.
    public var attempt: UInt32

    public init(url: String, scheme: String, source: String?,
                parameters: [QueryParameter], arguments: [QueryParameter], id: UInt64 = 0,
                attempt: UInt32 = 1) {
        self.url = url
        self.scheme = scheme
        self.source = source
        self.parameters = parameters
        self.arguments = arguments
        self.id = id
        self.attempt = attempt
    }
}
