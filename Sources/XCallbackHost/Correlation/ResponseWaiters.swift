import DequeModule
import Logging
import XCallbackBridge
import XCallbackMetrics
import XCallbackRouting
import XCallbackSystem
import XCallbackURL

/// The host's built-in `await` and `response` actions (see ``Correlation``),
/// routed like a plug-in's but run inside the host.
///
/// An `await` is held until the `response` with its ID arrives, until its own
/// `timeout` passes, or until the host stops. Its deadline is its own, not
/// the host's `--timeout`: that one is for plug-ins, and here a person may be
/// answering a dialog in another program. A `response` completes the await
/// and itself gets `success?requestID=ID`.
///
/// A response that finds no await waits `responseGrace` for one: a client
/// sends its await just before it opens the other program, and the two reach
/// the host through different inputs (socket and FIFO), so the response may
/// be read first. After that it is `UnknownRequestID`.
final class ResponseWaiters: PluginEndpoint {
    static let awaitHandler = 0
    static let responseHandler = 1

    /// The built-in routes, by handler index.
    static var routes: [(pattern: RoutePattern, handler: Int)] {
        [(Correlation.awaitPattern, awaitHandler), (Correlation.responsePattern, responseHandler)]
    }

    /// How long a response waits for its await to arrive (nanoseconds).
    static let responseGrace: UInt64 = 2_000_000_000
    /// Answered and expired IDs remembered, so a repeated or late response
    /// is told at once instead of waiting out the grace.
    static let rememberedIDs = 1024

    let pluginName = Correlation.scheme
    let counts: PluginMetrics?
    var keepsOwnDeadlines: Bool { true }
    let logger: Logger

    private typealias Delivery = (call: HandlerCall, outcome: Outcome)

    private struct Waiter {
        let call: HandlerCall
        let deadline: UInt64
        let seconds: Double
    }

    private struct ParkedResponse {
        let call: HandlerCall
        let outcome: Outcome
        let deadline: UInt64
    }

    private struct State {
        var waiters: [RequestID: Waiter] = [:]
        var parked: [RequestID: [ParkedResponse]] = [:]
        var concluded = RecentIDs(capacity: ResponseWaiters.rememberedIDs)
        /// The host is stopping: nothing can answer an await any more.
        var stopping = false
        var timerStopped = false
        /// When the timer thread will next look, if it is asleep until then;
        /// an earlier deadline must wake it.
        var timerWake: UInt64?
        /// Bumped to wake the timer thread.
        var wakeups: UInt64 = 0
    }

    private let state = ConditionLock(State())

    init(logger: Logger, counts: PluginMetrics? = nil) {
        self.logger = logger
        self.counts = counts
    }

    // MARK: handlers

    func invoke(handler index: Int, request: RequestFields, call: HandlerCall) {
        let deliveries = index == Self.awaitHandler ? hold(request, call) : respond(request, call)
        state.broadcast()
        for delivery in deliveries { delivery.call.deliver(.outcome(delivery.outcome)) }
    }

    /// An await: answered by its response if that came first, else held.
    private func hold(_ request: RequestFields, _ call: HandlerCall) -> [Delivery] {
        let id: RequestID
        let seconds: Double
        do {
            id = try Self.requestID(in: request)
            seconds = try Self.timeoutSeconds(in: request)
        } catch {
            return [(call, HostError.parameter(error.message))]
        }
        let deadline = MonotonicClock.now + UInt64(seconds * 1e9)
        return state.withLock { state -> [Delivery] in
            if state.stopping {
                return [(call, HostError.timeout("the host is stopping; no response to request \(id) can arrive"))]
            }
            if state.waiters[id] != nil {
                return [(call, HostError.duplicateRequestID("another await is already waiting for request \(id)"))]
            }
            if var early = state.parked.removeValue(forKey: id), !early.isEmpty {
                // The response came first and waited for us.
                let response = early.removeFirst()
                state.concluded.insert(id)
                return [(call, response.outcome), (response.call, Self.answered(id))]
                    + early.map { ($0.call, Self.alreadyAnswered(id)) }
            }
            state.waiters[id] = Waiter(call: call, deadline: deadline, seconds: seconds)
            if deadline < state.timerWake ?? .max { state.wakeups &+= 1 }
            logger.debug("awaiting the response to request \(id) for up to \(Correlation.decimal(seconds)) s")
            return []
        }
    }

    /// A response: answers its await, or waits `responseGrace` for it.
    private func respond(_ request: RequestFields, _ call: HandlerCall) -> [Delivery] {
        let id: RequestID
        let outcome: Outcome
        do {
            id = try Self.requestID(in: request)
            outcome = try Self.answer(in: request)
        } catch {
            return [(call, HostError.parameter(error.message))]
        }
        let deadline = MonotonicClock.now + Self.responseGrace
        return state.withLock { state -> [Delivery] in
            if let waiter = state.waiters.removeValue(forKey: id) {
                state.concluded.insert(id)
                logger.debug("request \(id) answered: \(outcome.kind.rawValue)")
                return [(waiter.call, outcome), (call, Self.answered(id))]
            }
            if state.concluded.contains(id) { return [(call, Self.alreadyAnswered(id))] }
            if state.stopping { return [(call, Self.unknown(id))] }
            state.parked[id, default: []].append(ParkedResponse(call: call, outcome: outcome, deadline: deadline))
            if deadline < state.timerWake ?? .max { state.wakeups &+= 1 }
            return []
        }
    }

    // MARK: deadlines and stopping

    /// Starts the thread that answers awaits and parked responses whose time is up.
    func start() {
        state.withLock { $0.timerStopped = false }
        Threads.detach { [self] in runTimer() }
    }

    /// Ends the timer thread (the host is done).
    func stopTimer() {
        state.withLock { $0.timerStopped = true }
        state.broadcast()
    }

    /// The host stops reading input, so no response can come any more:
    /// every await ends now (`Timeout`), every parked response too. The
    /// outcomes are delivered from a thread of their own: the caller may hold
    /// a sink's lock (a closed stdout stops the host from inside a write).
    func hostIsStopping() {
        let deliveries = state.withLock { state -> [Delivery] in
            state.stopping = true
            var deliveries: [Delivery] = state.waiters.map { id, waiter in
                (waiter.call, HostError.timeout("the host is stopping; no response to request \(id) can arrive"))
            }
            for (id, responses) in state.parked {
                deliveries += responses.map { ($0.call, Self.unknown(id)) }
            }
            state.waiters.removeAll()
            state.parked.removeAll()
            return deliveries
        }
        guard !deliveries.isEmpty else { return }
        Threads.detach {
            for delivery in deliveries { delivery.call.deliver(.outcome(delivery.outcome)) }
        }
    }

    private func runTimer() {
        while true {
            let now = MonotonicClock.now
            let (due, next, seen, stopped) = state.withLock { state -> ([Delivery], UInt64?, UInt64, Bool) in
                var due: [Delivery] = []
                var next: UInt64?
                for (id, waiter) in state.waiters {
                    if waiter.deadline <= now {
                        state.waiters[id] = nil
                        state.concluded.insert(id)
                        due.append((waiter.call, HostError.timeout("no response to request \(id) within \(Correlation.decimal(waiter.seconds)) s")))
                    } else {
                        next = min(next ?? .max, waiter.deadline)
                    }
                }
                for (id, responses) in state.parked {
                    var waiting: [ParkedResponse] = []
                    for response in responses {
                        if response.deadline <= now {
                            due.append((response.call, Self.unknown(id)))
                        } else {
                            waiting.append(response)
                            next = min(next ?? .max, response.deadline)
                        }
                    }
                    state.parked[id] = waiting.isEmpty ? nil : waiting
                }
                state.timerWake = next
                return (due, next, state.wakeups, state.timerStopped)
            }
            for delivery in due { delivery.call.deliver(.outcome(delivery.outcome)) }
            if stopped { return }
            state.wait(until: { $0.wakeups != seen || $0.timerStopped }, deadline: next) { _ in }
        }
    }

    // MARK: parameters

    private static func first(_ name: String, in request: RequestFields) -> String? {
        request.parameters.first { $0.name == name }?.value
    }

    private static func requestID(in request: RequestFields) throws(ParameterProblem) -> RequestID {
        guard let text = first(Correlation.requestIDParameter, in: request) else {
            throw ParameterProblem("missing required parameter '\(Correlation.requestIDParameter)'")
        }
        do {
            return try RequestID(text)
        } catch {
            throw ParameterProblem(error.message)
        }
    }

    private static func timeoutSeconds(in request: RequestFields) throws(ParameterProblem) -> Double {
        guard let text = first(Correlation.timeoutParameter, in: request) else { return Correlation.defaultTimeoutSeconds }
        guard let seconds = Double(text), seconds > 0, seconds <= Correlation.maxTimeoutSeconds else {
            throw ParameterProblem(
                "parameter '\(Correlation.timeoutParameter)' must be a number of seconds above 0 and at most \(Correlation.decimal(Correlation.maxTimeoutSeconds)), got '\(text.prefix(60))'")
        }
        return seconds
    }

    /// The other program's answer: its outcome kind, and every parameter
    /// but the `requestID` and `responseType` the host put in the callback.
    private static func answer(in request: RequestFields) throws(ParameterProblem) -> Outcome {
        guard let text = first(Correlation.responseTypeParameter, in: request) else {
            throw ParameterProblem("missing required parameter '\(Correlation.responseTypeParameter)' (success, error or cancel)")
        }
        guard let kind = OutcomeKind(rawValue: text) else {
            throw ParameterProblem("parameter '\(Correlation.responseTypeParameter)' must be success, error or cancel, got '\(text.prefix(60))'")
        }
        var parameters = request.parameters
        for name in [Correlation.requestIDParameter, Correlation.responseTypeParameter] {
            if let index = parameters.firstIndex(where: { $0.name == name }) { parameters.remove(at: index) }
        }
        return Outcome(kind: kind, parameters: parameters)
    }

    // MARK: outcomes

    private static func answered(_ id: RequestID) -> Outcome {
        .success([QueryParameter(name: Correlation.requestIDParameter, value: id.text)])
    }

    private static func alreadyAnswered(_ id: RequestID) -> Outcome {
        HostError.unknownRequestID("no call is waiting for request \(id): it was already answered or has timed out")
    }

    private static func unknown(_ id: RequestID) -> Outcome {
        HostError.unknownRequestID("no call is waiting for request \(id)")
    }
}

/// A parameter of a built-in action that is missing or malformed.
private struct ParameterProblem: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// The last `capacity` IDs inserted, oldest forgotten first.
private struct RecentIDs {
    let capacity: Int
    private var order = Deque<RequestID>()
    private var members = Set<RequestID>()

    init(capacity: Int) {
        self.capacity = capacity
    }

    func contains(_ id: RequestID) -> Bool { members.contains(id) }

    mutating func insert(_ id: RequestID) {
        guard members.insert(id).inserted else { return }
        order.append(id)
        if order.count > capacity { members.remove(order.removeFirst()) }
    }
}
