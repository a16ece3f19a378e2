import Logging
import Synchronization
import XCallbackBridge
import XCallbackMetrics
import XCallbackRouting
import XCallbackSystem
import XCallbackURL

/// Turns request lines into outcomes: parse, route, hand to the plug-in's
/// endpoint, take the one result, then write the record or dispatch the
/// callback as the next hop of a chain.
final class Dispatcher: SynchronousCallOwner, InFlightOwner, Sendable {
    let registry: PluginRegistry
    let limits: ParseLimits
    let timeout: Duration
    /// `timeout`, converted once: `Duration.nanoseconds` is 128-bit
    /// arithmetic, too dear for every request.
    let timeoutNanoseconds: UInt64
    /// Whether records need the input line (`jsonl`); `url` skips the copy.
    let keepsInput: Bool
    let logger: Logger
    /// What is in flight, and the clock that ends it at its deadline.
    let inFlight: InFlightTable
    /// The counts of `run --metrics`; nil when off. Also unretained, for
    /// the request path (`countEnded`): binding the optional retains it.
    let metrics: HostMetrics?
    let unretainedMetrics: Unmanaged<HostMetrics>?
    /// Which requests the general path's starts time on the fine clock.
    let generalSampler = LatencySampler()
    /// The last request id given out (`request_id`).
    private let lastID = Atomic<UInt64>(0)
    /// Set once a stop's grace period has passed (nanoseconds; 0: not):
    /// what expires from then on says so.
    private let stopGrace = Atomic<UInt64>(0)

    /// Internal callbacks a chain may follow before `LoopDetected` (docs/usage.md, "Error codes").
    static let maxHops = 8

    init(registry: PluginRegistry, limits: ParseLimits, timeout: Duration, keepsInput: Bool, logger: Logger,
         metrics: HostMetrics? = nil) {
        self.registry = registry
        self.metrics = metrics
        unretainedMetrics = metrics.map(Unmanaged.passUnretained)
        self.limits = limits
        self.timeout = timeout
        timeoutNanoseconds = timeout.nanoseconds
        self.keepsInput = keepsInput
        self.logger = logger
        inFlight = InFlightTable(timeout: timeout)
        inFlight.start(owner: self)
    }

    func stop() { inFlight.stop() }

    /// A stop's grace period has passed: every request still in flight is
    /// answered `Timeout`, saying so.
    func expireAll(stoppedWithGrace grace: Duration) {
        stopGrace.store(max(grace.nanoseconds, 1), ordering: .releasing)
        inFlight.expireAll()
    }

    // MARK: line → request

    /// Dispatches one trimmed, non-blank, non-comment line; `identity` is
    /// the caller's number and attempt for it (a fed request), else the
    /// host numbers it.
    func submit(line: UnsafeBufferPointer<UInt8>, sequence: UInt64, sink: OutputSink,
                identity: RequestIdentity? = nil) {
        let input = keepsInput ? String(decoding: line, as: UTF8.self) : ""
        let url: RequestURL
        do {
            url = try RequestURL(parsing: line, limits: limits)
        } catch {
            end(HostError.invalidURL(error.message), ofUnroutedLine: input, sequence: sequence, sink: sink)
            return
        }
        // A callback the host could never deliver to is refused up front,
        // before any plug-in acts on the request.
        for (name, callback) in [("x-success", url.successURL), ("x-error", url.errorURL), ("x-cancel", url.cancelURL)] {
            if let callback, !Self.hasScheme(callback) {
                let message = "\(name) is not a URL with a scheme: '\(callback.prefix(200))'"
                end(HostError.invalidURL(message), ofUnroutedLine: input, sequence: sequence, sink: sink)
                return
            }
        }
        start(url, text: String(decoding: line, as: UTF8.self), input: input, hop: 0, sequence: sequence, sink: sink,
              identity: identity)
    }

    /// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":".
    static func hasScheme(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { hasScheme($0) }
    }

    /// `hasScheme` for a URL's bytes.
    static func hasScheme(_ url: UnsafeBufferPointer<UInt8>) -> Bool {
        var sawLetter = false
        for byte in url {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                sawLetter = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
                guard sawLetter else { return false }
            case UInt8(ascii: ":"):
                return sawLetter
            default:
                return false
            }
        }
        return false
    }

    /// Answers a line that arrived after SIGINT/SIGTERM without running it,
    /// at its `x-error` callback when it names one.
    func refuseWhileStopping(line: UnsafeBufferPointer<UInt8>, sequence: UInt64, sink: OutputSink) {
        let input = keepsInput ? String(decoding: line, as: UTF8.self) : ""
        let outcome = HostError.shuttingDown("the host is shutting down; the request was not run")
        let callback = (try? RequestURL(parsing: line, limits: limits))?.callbackURL(for: outcome.kind)
        end(outcome, ofUnroutedLine: input, callback: callback.flatMap { Self.hasScheme($0) ? $0 : nil },
            sequence: sequence, sink: sink)
    }

    /// Answers a line the reader had to cut because it was too long; its
    /// `jsonl` input is the line's beginning and an ellipsis.
    func rejectOverlong(byteCount: Int, prefix: [UInt8], sequence: UInt64, sink: OutputSink) {
        let message = "line is longer than the limit of \(limits.maxLineBytes) bytes (\(byteCount) bytes read)"
        let input = keepsInput ? String(decoding: prefix, as: UTF8.self) + "…" : ""
        end(HostError.invalidURL(message), ofUnroutedLine: input, sequence: sequence, sink: sink)
    }

    private func start(_ url: RequestURL, text: String, input: String, hop: Int, sequence: UInt64, sink: OutputSink,
                       identity: RequestIdentity?) {
        let now = MonotonicClock.now
        // Its deadline reads the fine clock anyway: sampled, that is its
        // fine start too (ticks of 2^22 ns, about 4 ms, as the coarse one's).
        let sampled = unretainedMetrics != nil && generalSampler.samples(tick: now >> 22)
        let pending = PendingRequest(
            id: identity?.id ?? nextID(), attempt: identity?.attempt ?? 1, keepsID: identity != nil,
            sequence: sequence, input: input, url: url, urlText: text, hop: hop, sink: sink,
            deadline: now + timeoutNanoseconds, fineStarted: sampled ? now : 0, table: registry.table)
        attempt(pending, declinedBy: nil)
    }

    /// A new request id (`request_id`).
    func nextID() -> UInt64 { lastID.add(1, ordering: .relaxed).newValue }

    // MARK: request → handler

    /// Gives the request to the best remaining route.
    func attempt(_ pending: PendingRequest, declinedBy previous: String?) {
        guard !pending.isFinished else { return }
        guard let match = pending.nextCandidate() else {
            let message = previous == nil
                ? NotFoundMessage(pending.url).text(table: registry.table, statuses: registry.statuses,
                                                     skippedDirectories: registry.skippedDirectories)
                : "every matching route declined the request (last: plug-in '\(previous!)')"
            finish(pending, HostError.notFound(message))
            return
        }
        // A line's first route is counted in its input's shares (`InputShares`):
        // a plug-in that stalled, holding its most, is refused at once.
        if previous == nil && pending.hop == 0 && !match.value.endpoint.keepsOwnDeadlines {
            let slot = match.value.shareSlot
            guard pending.sink.shares.charge(slot) else {
                finish(pending, HostError.unavailable(Self.stalledMessage(match.value.pluginName)))
                return
            }
            pending.charged(slot)
        }
        let fields = pending.fields(arguments: match.arguments.map { QueryParameter(name: $0.name, value: $0.value) })
        let call = begin(pending, plugin: match.value.pluginName, counts: match.value.endpoint.counts)
        // The built-in await keeps its own, longer deadline.
        if previous == nil && !match.value.endpoint.keepsOwnDeadlines { inFlight.add(pending) }
        match.value.endpoint.invoke(handler: match.value.handlerIndex, request: fields, call: call)
        // Answered before invoke returned (the common in-process case): take it
        // off the timer now, while it is hot, instead of at the next compaction.
        if previous == nil && pending.isFinished { inFlight.removeIfLast(pending) }
    }

    /// Why a stalled plug-in's request was refused (`InputShares`).
    static func stalledMessage(_ plugin: String) -> String {
        let seconds = Double(InputShares.stallPatience) / 1e9
        return "plug-in '\(plugin)' has answered none of this input's requests for \(seconds) s and already holds \(InputShares.stalledCap) of them; the request was not run"
    }

    /// A lane's request joins the general path: from here on it is a
    /// pending request like any other, its first route marked as tried, its
    /// deadline that of when the lane sent it. The one way across, for an
    /// input stream's lane (`takeOver`, a decline, a chain) and a worker's
    /// (`adopt`).
    /// `fineStarted`: its fine start if the lane sampled it (0: not).
    func handOver(line: UnsafeBufferPointer<UInt8>, id: UInt64, sequence: UInt64, sink: OutputSink,
                  started: UInt64, fineStarted: UInt64) -> PendingRequest {
        let text = String(decoding: line, as: UTF8.self)
        // The lane parsed the line, so RequestURL does too.
        let url = (try? RequestURL(parsing: line, limits: limits)) ?? RequestURL(scheme: "")
        let pending = PendingRequest(
            id: id, sequence: sequence, input: keepsInput ? text : "", url: url, urlText: text, hop: 0, sink: sink,
            deadline: started + timeoutNanoseconds, fineStarted: fineStarted, table: registry.table)
        _ = pending.nextCandidate()
        return pending
    }

    /// The call through which `plugin`'s handler, which the request is
    /// about to enter (or, handed over, is already in), answers it.
    func begin(_ pending: PendingRequest, plugin: String, counts: PluginMetrics?) -> HandlerCall {
        let call = handlerCall(for: pending, plugin: plugin)
        pending.began(call, plugin: plugin, counts: counts)
        return call
    }

    /// The call through which `plugin`'s handler answers `pending`.
    func handlerCall(for pending: PendingRequest, plugin: String) -> HandlerCall {
        HandlerCall { [self] result in
            switch result {
            case .declined: attempt(pending, declinedBy: plugin)
            case .outcome(let outcome): finish(pending, outcome)
            }
        }
    }

    // MARK: outcome → record

    /// Gives the request its outcome, if nothing else has.
    private func finish(_ pending: PendingRequest, _ outcome: Outcome) {
        guard pending.claim() else { return }
        _ = pending.takeCurrentCall()
        conclude(pending, outcome)
    }

    /// Delivers a claimed outcome (`end`).
    func conclude(_ pending: PendingRequest, _ outcome: Outcome) {
        end(.outcome(outcome), of: GeneralRequest(pending: pending, registry: registry))
    }

    /// A callback to one of the host's own schemes is the next request of
    /// the chain; the chain ends in one record, that of its last outcome.
    func follow(_ callback: String, with outcome: Outcome, after pending: PendingRequest) {
        let next = CallbackURL.appending(outcome.parameters, to: callback)
        guard pending.hop < Self.maxHops else {
            let message = "a chain of callbacks to this host's own routes went past \(Self.maxHops) hops (last: \(next.prefix(200)))"
            end(HostError.loopDetected(message), ofUnroutedLine: pending.input, sequence: pending.sequence,
                sink: pending.sink)
            return
        }
        do {
            let url = try RequestURL(parsing: next, limits: limits)
            // A fed request's chain keeps its number: the queue's request id.
            let identity = pending.keepsID ? RequestIdentity(id: pending.request.id, attempt: pending.request.attempt) : nil
            start(url, text: next, input: pending.input, hop: pending.hop + 1, sequence: pending.sequence, sink: pending.sink,
                  identity: identity)
        } catch {
            end(HostError.invalidURL("callback URL: \(error.message)"), ofUnroutedLine: pending.input,
                sequence: pending.sequence, sink: pending.sink)
        }
    }

    /// The deadline passed: `Timeout`, and the endpoint retires the attempt.
    func expire(_ pending: PendingRequest) {
        guard pending.claim() else { return }
        pending.takeCurrentCall()?.abandon()
        let plugin = pending.currentPlugin ?? "?"
        let grace = stopGrace.load(ordering: .acquiring)
        if grace != 0 {
            let seconds = Double(grace) / 1e9
            conclude(pending, HostError.timeout("the host was stopped, and plug-in '\(plugin)' did not complete the request within the \(seconds) s grace period"))
            return
        }
        let seconds = Double(timeoutNanoseconds) / 1e9
        conclude(pending, HostError.timeout("plug-in '\(plugin)' did not complete the request within \(seconds) s"))
    }

}
