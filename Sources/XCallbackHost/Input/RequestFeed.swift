/// A request handed to the host by a program instead of read from a stream:
/// the durable queue's claimed requests (`xcallback run --queue`).
public struct FedRequest: Sendable {
    /// The request line, trimmed, not blank and not a comment.
    public var line: [UInt8]
    /// The request's number: what `request_id` answers, and the `sequence`
    /// of the record it ends in, so a receiver can tell records apart.
    public var id: UInt64
    /// What `request_attempt` answers: 1 the first time it runs.
    public var attempt: UInt32

    public init(line: [UInt8], id: UInt64, attempt: UInt32) {
        self.line = line
        self.id = id
        self.attempt = attempt
    }
}

/// Where fed requests come from. `next()` is called from one thread at a
/// time, the one that owns the feed (see `HandoffLoop`).
public protocol RequestFeed: Sendable {
    /// The next request, waiting until there is one; nil once the feed is
    /// over (after `Host.requestStop()`, say).
    func next() -> FedRequest?
}

/// Takes the record of each fed request, once, from any thread. The
/// record's `sequence` is the request's `id`.
public protocol RecordReceiver: Sendable {
    func receive(_ record: OutcomeRecord)
}
