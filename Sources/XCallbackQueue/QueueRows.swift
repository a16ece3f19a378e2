#if Queue  // the package's Queue trait: swift build --traits Queue
import XCallbackHost
import XCallbackURL

/// A line to enqueue, with its idempotency key if it had one.
public struct EnqueueLine: Sendable, Equatable {
    public var url: String
    public var key: String?
    /// The longest line a queue takes, in bytes: the schema's `enqueue`
    /// refuses longer ones, so `xcallback enqueue --max-line-bytes` stops here.
    public static let maxLineBytes = 1_048_576
    /// The longest idempotency key, in bytes (the schema's `enqueue` checks it too).
    public static let maxKeyBytes = 1_024
    public init(url: String, key: String? = nil) {
        self.url = url
        self.key = key
    }
}

/// A request a host leased: its lease is (`host`, `attempt`).
struct ClaimedRequest: Sendable {
    var id: Int64
    var line: String
    var attempt: Int32
    /// The host row that holds the lease.
    var host: Int64
    /// A suspect run beside other work (`claim_beside`): a host runs a
    /// few such at once (QueueConsumerOptions.suspectsBeside).
    var beside = false
}

/// A request with its outcome, ready to record.
struct FinishedRequest: Sendable {
    var id: Int64
    var attempt: Int32
    var host: Int64
    var outcome: String
    var params: String
    /// The callback as the request gave it; "" for none.
    var callback: String
    /// The record, to write or open once it is committed.
    var record: OutcomeRecord
}

/// Outcomes a host could not record, by where their requests were found:
/// the lease (host, attempt) they ran under was no longer theirs.
struct FencedRequests: Sendable, Equatable {
    /// An outcome was recorded meanwhile (by another host, or dead).
    var recorded = 0
    /// Neither waiting nor recorded any more (pruned, say).
    var gone = 0
    /// Back in the queue, leased by no one: they run again.
    var queued = 0
    /// Leased again by this host, under a later attempt.
    var here = 0
    /// Leased by another host.
    var elsewhere = 0

    var count: Int { recorded + gone + queued + here + elsewhere }

    /// One log line's worth: what happened to them, in words.
    var description: String {
        var parts: [String] = []
        if elsewhere > 0 { parts.append("\(elsewhere) had passed to another host, which runs them again") }
        if here > 0 { parts.append("\(here) were claimed again by this host, which runs them again under a new attempt number") }
        if queued > 0 { parts.append("\(queued) went back to the queue, to run again under a new attempt number") }
        if recorded > 0 { parts.append("\(recorded) already had an outcome") }
        if gone > 0 { parts.append("\(gone) were no longer in the queue") }
        return "\(count) outcome(s) not recorded: this host's lease on them had run out (\(parts.joined(separator: "; ")))"
    }
}

/// Where `outcomes` has read up to: (recording transaction, position).
public struct OutcomeCursor: Sendable, Equatable {
    public var transaction: String
    public var position: Int64
    public static let start = OutcomeCursor(transaction: "0", position: 0)
}

/// An outcome as the queue keeps it.
public struct StoredOutcome: Sendable {
    public var cursor: OutcomeCursor
    public var requestID: Int64
    public var line: String
    public var kind: OutcomeKind
    /// The outcome parameters, as `StoredParameters` encodes them.
    public var params: String
    public var callback: String?
    public var attempts: Int
    public var dead: Bool

    /// The record `run` wrote for it.
    public var record: OutcomeRecord {
        OutcomeRecord(sequence: UInt64(requestID), input: line,
                      outcome: Outcome(kind: kind, parameters: StoredParameters.decode(params)), callback: callback)
    }
}

/// What `xcallback queue status` shows.
public struct QueueStatus: Sendable, Equatable {
    public var ready: Int
    public var leased: Int
    public var done: Int
    public var dead: Int
    /// How long the oldest waiting request has waited; 0 when none waits.
    public var oldestReadySeconds: Double
    /// Hosts whose lease is current.
    public var hosts: Int
}

/// Outcome parameters in one text column: `name=value&…`, each side
/// percent-encoded (only unreserved bytes stay literal), so `&` and `=`
/// never appear inside a name or value and decoding gives back exactly
/// what was stored, repeated names and order included.
enum StoredParameters {
    static func encode(_ parameters: [QueryParameter]) -> String {
        parameters.map { PercentEncoding.encode($0.name) + "=" + PercentEncoding.encode($0.value) }
            .joined(separator: "&")
    }

    static func decode(_ text: String) -> [QueryParameter] {
        guard !text.isEmpty else { return [] }
        return text.split(separator: "&", omittingEmptySubsequences: false).map { pair in
            let name = pair.prefix { $0 != "=" }
            let value = pair.dropFirst(name.count + 1)
            return QueryParameter(name: (try? PercentEncoding.decode(name)) ?? String(name),
                                  value: (try? PercentEncoding.decode(value)) ?? String(value))
        }
    }
}

/// The outcome of a request no host finished in its attempts.
enum DeadRequest {
    /// The host's error code for it (domain `xcallback`).
    static let errorCode = "Abandoned"

    static func record(line: String, strikes: Int) -> OutcomeRecord {
        let outcome = Outcome.error(
            code: errorCode,
            message: "no outcome: the host running this request, alone, stopped before recording one \(strikes) time(s) (its --max-attempts); see 'xcallback queue dead' to re-queue it",
            domain: Outcome.hostErrorDomain)
        let callback = (try? RequestURL(parsing: line))?.callbackURL(for: .error)
        return OutcomeRecord(sequence: 0, input: line, outcome: outcome,
                             callback: callback.flatMap { OutcomeRecord.isDeliverable(callback: $0) ? $0 : nil })
    }
}
#endif
