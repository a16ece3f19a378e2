import Synchronization
import XCallbackBridge
import XCallbackMetrics
import XCallbackRouting
import XCallbackSystem
import XCallbackURL

/// One request on its way through the host, from dispatch to its one
/// outcome. Finishing is a race between the handler, the deadline and
/// shutdown; `claim()` lets exactly one of them win.
final class PendingRequest: Sendable {
    /// The request as every route is given it, built once from the line:
    /// its text (`request_url`), scheme, source and parameters, the host's
    /// number for it (`request_id`) and the attempt (`request_attempt`: 1
    /// but for a fed request a queue claimed again). Only a route's
    /// arguments differ from one attempt to the next (`fields(arguments:)`).
    let request: RequestFields
    /// Whether `id` was given by the caller (a fed request), so a chain
    /// keeps it instead of taking the host's next number.
    let keepsID: Bool
    /// The record's place in its input stream (for `--keep-order`).
    let sequence: UInt64
    /// The line that started the chain, for the `jsonl` record.
    let input: String
    /// This hop's line, parsed: what routing and the callbacks read.
    let url: RequestURL
    /// 0 for the line itself, 1... for callbacks dispatched internally.
    let hop: Int
    let sink: OutputSink
    /// Monotonic nanoseconds after which the host answers `Timeout`.
    let deadline: UInt64
    /// When it began on the fine clock, if its latency is sampled (0: not;
    /// `LatencySampler`).
    let fineStarted: UInt64

    private let finished = Atomic<Bool>(false)
    /// The slot of the plug-in its input's shares counted it for, -1 if
    /// none did (`InputShares`): set before it is dispatched, read when it ends.
    private let share = Atomic<Int>(-1)
    private let state: Lock<State>

    private struct State: @unchecked Sendable {
        // @unchecked: RouteMatches iterates a value copy of the table; the
        // dispatcher only advances it from the attempt that just declined.
        /// The best route, found eagerly (the common case needs no more).
        var first: RouteMatch<RouteTarget>?
        /// Every candidate in order, built only when a handler declines.
        var rest: RouteMatches<RouteTarget>?
        var table: RouteTable<RouteTarget>
        var attempts = 0
        var currentCall: HandlerCall?
        var currentPlugin: String?
        /// Its counts (`run --metrics`; nil when off).
        var currentCounts: PluginMetrics?
    }

    init(id: UInt64, attempt: UInt32 = 1, keepsID: Bool = false, sequence: UInt64, input: String, url: RequestURL, urlText: String, hop: Int,
         sink: OutputSink, deadline: UInt64, fineStarted: UInt64 = 0, table: RouteTable<RouteTarget>) {
        request = RequestFields(url: urlText, scheme: url.scheme, source: url.source, parameters: url.parameters.items,
                                arguments: [], id: id, attempt: attempt)
        self.keepsID = keepsID
        self.sequence = sequence
        self.input = input
        self.url = url
        self.hop = hop
        self.sink = sink
        self.deadline = deadline
        self.fineStarted = fineStarted
        let first = table.firstMatch(scheme: url.scheme, host: url.host, path: url.pathSegments)
        self.state = Lock(State(first: first, table: table))
    }

    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// True for exactly one caller: the one that gets to give the outcome.
    /// The winner also drops the current call, which breaks the cycle
    /// request → call → delivery closure → request.
    func claim() -> Bool {
        guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        return true
    }

    /// Takes the current call out (to abandon it), leaving none behind.
    func takeCurrentCall() -> HandlerCall? {
        state.withLock { state in
            defer { state.currentCall = nil }
            return state.currentCall
        }
    }

    /// The next route to try, best first.
    func nextCandidate() -> RouteMatch<RouteTarget>? {
        let url = self.url
        return state.withLock { state -> RouteMatch<RouteTarget>? in
            state.attempts += 1
            if state.attempts == 1 { return state.first }
            if state.rest == nil {
                // A decline: walk every candidate, past the one just tried.
                var all = state.table.matches(scheme: url.scheme, host: url.host, path: url.pathSegments)
                _ = all.next()
                state.rest = all
            }
            return state.rest!.next()
        }
    }

    /// The request as an endpoint is given it, with a route's `arguments`.
    func fields(arguments: [QueryParameter]) -> RequestFields {
        var fields = request
        fields.arguments = arguments
        return fields
    }

    func began(_ call: HandlerCall, plugin: String, counts: PluginMetrics?) {
        state.withLock {
            $0.currentCall = call
            $0.currentPlugin = plugin
            $0.currentCounts = counts
        }
    }

    /// Its input's shares counted it for the plug-in in `slot`.
    func charged(_ slot: Int) { share.store(slot, ordering: .releasing) }
    var shareSlot: Int { share.load(ordering: .acquiring) }

    var currentPlugin: String? { state.withLock { $0.currentPlugin } }
    var currentCounts: PluginMetrics? { state.withLock { $0.currentCounts } }
}
