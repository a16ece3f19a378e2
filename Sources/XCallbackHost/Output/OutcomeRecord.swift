import XCallbackURL

/// The one record a counted input line ends in.
public struct OutcomeRecord: Sendable, Equatable {
    /// Position among the counted lines of its input stream.
    public var sequence: UInt64
    /// The request line as read (for `jsonl`; empty when not needed).
    public var input: String
    public var outcome: Outcome
    /// The callback URL for this outcome as the request gave it (before
    /// the outcome parameters are appended), or nil.
    public var callback: String?

    public init(sequence: UInt64, input: String, outcome: Outcome, callback: String?) {
        self.sequence = sequence
        self.input = input
        self.outcome = outcome
        self.callback = callback
    }

    /// The callback URL with the outcome parameters appended, as written or opened.
    public var resolvedCallback: String? {
        callback.map { CallbackURL.appending(outcome.parameters, to: $0) }
    }
}

extension OutcomeRecord {
    /// Whether `callback` starts with an RFC 3986 scheme, as the host
    /// requires of a callback it delivers to (the same check `run` applies).
    public static func isDeliverable(callback: String) -> Bool { Dispatcher.hasScheme(callback) }
}
