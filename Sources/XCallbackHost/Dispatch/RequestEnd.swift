import XCallbackBridge
import XCallbackMetrics
import XCallbackURL

// The one place a request ends. Whichever path carried it (the general
// path, an input stream's fast lane, a worker's lane) and whatever ended it
// (an answer, a decline past the last route, a deadline, a crash, a stop's
// grace period, a line refused before dispatch), its outcome comes here,
// and here alone it is decided whether the outcome becomes the next hop of
// a chain or a record, and in which form the record is written.

/// An outcome as it reaches the end of its request: a value, or a success
/// or cancel still in the bytes a handler's reply or a worker's frame left
/// it in, made into a value only where one is needed (`jsonl`,
/// `--keep-order`, an opened callback, a chain).
enum Ending {
    case outcome(Outcome)
    case bytes(OutcomeKind, parameters: UnsafeBufferPointer<ByteParameter>, in: UnsafePointer<UInt8>)

    var kind: OutcomeKind {
        switch self {
        case .outcome(let outcome): outcome.kind
        case .bytes(let kind, _, _): kind
        }
    }

    /// Whether the plug-in itself gave it, not the host in its place (a
    /// `Timeout`, `PluginCrashed`, `PluginUnavailable`...): what ends a
    /// plug-in's stall on an input (`InputShares`). A `ParameterError` the
    /// host's side of the plug-in gave is an answer: the plug-in is there.
    var isPluginAnswer: Bool {
        switch self {
        case .bytes: true
        case .outcome(let outcome):
            outcome.kind != .error || outcome.value("errorDomain") != Outcome.hostErrorDomain
                || !Self.noAnswerCodes.contains(outcome.value("errorCode") ?? "")
        }
    }

    /// The host's errors given in place of a plug-in's answer.
    private static let noAnswerCodes: Set<String> = [
        "Timeout", "PluginCrashed", "PluginUnavailable", "SandboxViolation", "MemoryLimit", "ShuttingDown",
    ]

    var outcome: Outcome {
        switch self {
        case .outcome(let outcome): outcome
        case .bytes(let kind, let parameters, let base): ReplyCapture.outcome(kind, parameters: parameters, in: base)
        }
    }
}

/// What the host still holds of a request when it ends, on the path that
/// carried it there.
protocol EndingRequest {
    /// The record's place in its input stream.
    var sequence: UInt64 { get }
    var sink: OutputSink { get }
    /// Runs `body` with the decoded callback URL the request names for an
    /// outcome of `kind` (`OutcomeKind.callback` picks it), or nil.
    func withCallback<R>(for kind: OutcomeKind, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R
    /// Whether `callback` goes to one of the host's own routes, as the
    /// request's path knows them (`RoutedSchemes`).
    func routesScheme(of callback: UnsafeBufferPointer<UInt8>) -> Bool
    /// The line, for a `jsonl` record (empty when records do not need it).
    var input: String { get }
    /// The request as the general path holds it, already claimed, to follow
    /// a chain from; nil when something else ended it meanwhile.
    func claimedForChain() -> PendingRequest?
    /// The counts of the plug-in whose handler ended it (nil: the host
    /// answered it, or metrics are off), unretained: counts live as long as
    /// the host. And when it began on the fine clock (monotonic ns), if
    /// its latency is sampled (0: not). For the metrics
    /// (Metrics/EndingRequest+Metrics.swift).
    var endedBy: Unmanaged<PluginMetrics>? { get }
    var fineStarted: UInt64 { get }
    /// Tells the sampler that gave the fine start what the request took.
    func timed(_ nanoseconds: UInt64, by dispatcher: Dispatcher)
    /// The slot of the plug-in its input's shares counted it for
    /// (`InputShares`), or -1 if they did not count it.
    var shareSlot: Int { get }
}

extension Dispatcher {
    /// Ends `request` with `answer`: the next hop of a chain when the
    /// callback goes to one of the host's own schemes, else its one record.
    func end(_ answer: Ending, of request: some EndingRequest) {
        let shareSlot = request.shareSlot
        if shareSlot >= 0 { request.sink.shares.release(shareSlot, answered: answer.isPluginAnswer) }
        request.withCallback(for: answer.kind) { callback in
            if let callback, request.routesScheme(of: callback) {
                if let pending = request.claimedForChain() {
                    follow(String(decoding: callback, as: UTF8.self), with: answer.outcome, after: pending)
                }
                return
            }
            let sink = request.sink
            countEnded(answer, of: request, to: sink)
            if case .bytes(let kind, let parameters, let base) = answer, sink.takesBytes {
                sink.emit(answered: kind) { output in
                    ReplyCapture.appendRecord(kind, callback: callback, parameters: parameters, in: base, to: &output)
                }
                return
            }
            sink.emit(OutcomeRecord(sequence: request.sequence, input: request.input, outcome: answer.outcome,
                                    callback: callback.map { String(decoding: $0, as: UTF8.self) }))
        }
    }

    /// Ends a request with an outcome of the host's own and no route's
    /// answer (a line that did not parse, named a callback the host could
    /// not deliver to, came during a stop, or was too long; a chain past
    /// its hops, or with a callback that did not parse), at `callback` when
    /// one is given.
    func end(_ outcome: Outcome, ofUnroutedLine input: String, callback: String? = nil, sequence: UInt64,
             sink: OutputSink) {
        end(.outcome(outcome), of: UnroutedRequest(sequence: sequence, sink: sink, input: input, callback: callback))
    }
}

/// A request the host ends itself, with no route's answer to deliver (a
/// line refused before dispatch, a chain cut short): it starts no chain.
struct UnroutedRequest: EndingRequest {
    var sequence: UInt64
    var sink: OutputSink
    var input: String
    var callback: String?

    func withCallback<R>(for kind: OutcomeKind, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard var callback else { return body(nil) }
        return callback.withUTF8 { body($0) }
    }

    func routesScheme(of callback: UnsafeBufferPointer<UInt8>) -> Bool { false }
    func claimedForChain() -> PendingRequest? { nil }
    var shareSlot: Int { -1 }
}

/// A request on the general path, claimed by whatever ended it.
struct GeneralRequest: EndingRequest {
    let pending: PendingRequest
    let registry: PluginRegistry

    var sequence: UInt64 { pending.sequence }
    var sink: OutputSink { pending.sink }
    var input: String { pending.input }

    func withCallback<R>(for kind: OutcomeKind, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard var callback = pending.url.callbackURL(for: kind) else { return body(nil) }
        return callback.withUTF8 { body($0) }
    }

    func routesScheme(of callback: UnsafeBufferPointer<UInt8>) -> Bool { registry.routesScheme(of: callback) }
    func claimedForChain() -> PendingRequest? { pending }
    var shareSlot: Int { pending.shareSlot }
}

/// A request an input stream's fast lane ran in this process: its line is
/// still in the input buffer and its callbacks decoded in the lane.
struct LaneRequest: EndingRequest {
    /// What the end reads of the call, which itself was moved into the
    /// lane's reply slot (`ReplyTable.openSynchronous`).
    struct Call {
        let line: UnsafeBufferPointer<UInt8>
        let id: UInt64
        let sequence: UInt64
        /// When its handler was called (coarse monotonic ns).
        let started: UInt64
        /// The same on the fine clock, if sampled (0: not).
        let fineStarted: UInt64
    }

    let call: Call
    /// The lane's sink, as `submitFast` was given it: read back from the
    /// call (`outputSink`), it was retained and released.
    let sink: OutputSink
    let lane: FastLane
    let snapshot: RouteSnapshot
    let dispatcher: Dispatcher
    /// Its route's plug-in's counts (`run --metrics`; nil when off).
    let counts: Unmanaged<PluginMetrics>?

    var sequence: UInt64 { call.sequence }
    /// Not counted: the lane runs the handler while the input waits, so
    /// nothing of it piles up (one that keeps its reply is, once promoted).
    var shareSlot: Int { -1 }
    var input: String { dispatcher.keepsInput ? String(decoding: call.line, as: UTF8.self) : "" }

    func withCallback<R>(for kind: OutcomeKind, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        body(lane.decodedCallback(for: kind))
    }

    func routesScheme(of callback: UnsafeBufferPointer<UInt8>) -> Bool { snapshot.routesScheme(of: callback) }

    func claimedForChain() -> PendingRequest? {
        let pending = dispatcher.handOver(line: call.line, id: call.id, sequence: call.sequence, sink: sink,
                                          started: call.started, fineStarted: call.fineStarted)
        return pending.claim() ? pending : nil
    }
}
