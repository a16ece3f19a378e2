import Logging
import XCallbackBridge
import XCallbackMetrics
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs one plug-in in worker processes (`--isolation process`): a crash
/// is `PluginCrashed` for the requests that worker had in flight, never a
/// crash of the host; the worker is restarted with growing delays, and a
/// plug-in that crashes too often is disabled.
final class WorkerEndpoint: PluginEndpoint, PathIdentified {
    let pluginName: String
    let path: String
    private let executable: String
    /// The checks every (re)started worker's file passes first.
    private let security: FileSecurity
    private let sandboxing: WorkerSandboxing
    /// The routes other plug-ins own now, for each worker this starts.
    private let takenRoutes: @Sendable () -> [QueryParameter]
    private let spawner: WorkerSpawner
    private let policy: RestartPolicy
    private let logger: Logger
    /// The routes of the first worker, in handler order; a restarted worker
    /// must report the same, or the plug-in is disabled.
    private let routes: [String]
    private let state: Lock<State>
    /// Whether the host is stopping (SIGINT/SIGTERM, closed stdout).
    private let hostStopping: @Sendable () -> Bool
    /// This plug-in's counts (`run --metrics`): its workers' lives.
    private let metrics: PluginMetrics?
    var counts: PluginMetrics? { metrics }

    private struct State {
        var current: WorkerProcess?
        var restarting = false
        /// Requests that arrived while no worker was ready.
        var waiting = WaitingLine()
        var supervision: WorkerSupervision
        var disabledReason: String?
        var stopped = false
        /// Kinds of call the sandbox turned away that the log has told of.
        var deniedLogged: DeniedCalls = []
        /// The endpoint of the file's new version, once this one retired
        /// because its file was replaced: what still arrives here goes there.
        var successor: WorkerEndpoint?
    }

    /// How long a retired endpoint keeps taking requests from callers that
    /// looked up their route just before the swap.
    static let retireDelay: Duration = .milliseconds(200)

    init(first worker: WorkerProcess, executable: String, security: FileSecurity, sandboxing: WorkerSandboxing,
         takenRoutes: @escaping @Sendable () -> [QueryParameter], spawner: WorkerSpawner,
         policy: RestartPolicy, logger: Logger, hostStopping: @escaping @Sendable () -> Bool = { false },
         metrics: PluginMetrics? = nil) {
        self.metrics = metrics
        self.spawner = spawner
        self.hostStopping = hostStopping
        self.security = security
        self.sandboxing = sandboxing
        self.takenRoutes = takenRoutes
        self.pluginName = worker.ready.info.name
        self.path = worker.ready.info.path
        self.routes = worker.ready.routes
        self.executable = executable
        self.policy = policy
        self.logger = logger
        self.state = Lock(State(current: worker, supervision: WorkerSupervision(policy: policy)))
        metrics?.workerStarts.add()
        metrics?.sandboxed(sandboxing.mode != .off && (sandboxing.kernel.seccomp || sandboxing.kernel.landlockABI != nil))
        metrics?.quarantined(false)
        watch(worker)
    }

    func invoke(handler index: Int, request: RequestFields, call: HandlerCall) {
        // Sent outside the lock: a send can wait for a worker that reads
        // slowly (or not at all), and the lock must stay free meanwhile (a
        // stop looks for stuck workers under it).
        var refused: WorkerProcess?
        while true {
            enum Step { case refuse(String), send(WorkerProcess), queued, forward(WorkerEndpoint) }
            let step = state.withLock { state -> Step in
                if let successor = state.successor { return .forward(successor) }
                if let reason = state.disabledReason { return .refuse(reason) }
                if let worker = state.current, worker !== refused { return .send(worker) }
                // A worker that does not read its requests must not have the
                // host hold them without bound (many connections each send
                // up to a window of 64 KiB lines).
                guard state.waiting.count < Self.maxWaiting, state.waiting.bytes < Self.maxWaitingBytes else {
                    return .refuse("plug-in '\(pluginName)' is not taking requests, and \(state.waiting.count) already wait for it")
                }
                // None ready, or the one there is going: the next one takes it.
                state.waiting.append(WorkerRequest(handler: index, request: request, call: call))
                return .queued
            }
            switch step {
            case .refuse(let reason):
                call.deliver(.outcome(HostError.unavailable(reason)))
                return
            case .forward(let successor):
                forward(handler: index, request: request, call: call, to: successor)
                return
            case .queued:
                // Turned away by a writer that finished meanwhile: its
                // `whenWriterResumes` may have sent the line before this
                // joined it.
                if let refused, !refused.isWriterBusy { sendWaiting(to: refused) }
                return
            case .send(let worker):
                if worker.send(handler: index, request: request, call: call) { return }
                refused = worker
            }
        }
    }

    /// At most this many requests, and this much request text, wait for a
    /// worker; past that, new ones are refused (`PluginUnavailable`).
    static let maxWaiting = 16_384
    static let maxWaitingBytes = 64 << 20

    var unavailableReason: String? { state.withLock { $0.disabledReason } }

    /// The worker new requests go to now, if one is ready (the lane sends
    /// to it directly; `invoke` handles every other case).
    var currentWorker: WorkerProcess? {
        state.withLock { state in state.disabledReason == nil ? state.current : nil }
    }

    /// Re-enables a disabled plug-in and starts a worker: on SIGHUP (which
    /// also forgets earlier quarantines), or when a quarantine's cool-down ends.
    /// Returns whether it lifted a quarantine.
    @discardableResult
    func reload(byOperator: Bool = true) -> Bool {
        let restart = state.withLock { state -> Bool in
            guard state.disabledReason != nil else { return false }
            state.disabledReason = nil
            state.supervision.forgive(byOperator: byOperator)
            return true
        }
        if restart {
            metrics?.quarantined(false)
            scheduleStart(after: .zero)
        }
        return restart
    }

    /// The plug-in's file was replaced or removed: no restarts from now on;
    /// the worker answers what it has, then stops. Requests waiting for a
    /// restart already under way still get that worker (it then retires
    /// too): they were accepted before the change. With a `successor` (the
    /// file's new version), a request that still reaches this endpoint (its
    /// caller looked the route up before the swap, however long ago) goes to
    /// the successor, which has the route, instead of being refused.
    func retire(successor: WorkerEndpoint? = nil) {
        spawner.schedule(after: Self.retireDelay) { [self] in
            let (worker, restartPending) = state.withLock { state -> (WorkerProcess?, Bool) in
                state.stopped = true
                state.successor = successor
                if state.disabledReason == nil {
                    state.disabledReason = "plug-in '\(pluginName)' was removed or replaced"
                }
                return (state.current, state.restarting)
            }
            worker?.retire()
            if !restartPending { failWaiting() }
        }
    }

    /// A request for this retired endpoint's handler `index`, sent to the
    /// successor's handler of the same route; refused if the new version
    /// has no such route.
    private func forward(handler index: Int, request: RequestFields, call: HandlerCall, to successor: WorkerEndpoint) {
        guard index < routes.count, let target = successor.routes.firstIndex(of: routes[index]) else {
            call.deliver(.outcome(HostError.unavailable("plug-in '\(pluginName)' was replaced, and its new version has no route \(index < routes.count ? routes[index] : "#\(index)")")))
            return
        }
        successor.invoke(handler: target, request: request, call: call)
    }

    /// Asks every worker to finish and exit (graceful shutdown).
    func shutdown() {
        let worker = state.withLock { state -> WorkerProcess? in
            state.stopped = true
            return state.current
        }
        worker?.shutdown()
    }

    /// The host is stopping and its input is stuck: a worker that stopped
    /// reading its socket is killed, which fails the write the input waits
    /// in; nothing restarts.
    func endIfStuck() {
        let worker = state.withLock { state -> WorkerProcess? in
            state.stopped = true
            return state.current
        }
        worker?.killIfStuck()
    }

    /// The current worker's process, if one runs (`run --metrics` reads its
    /// memory and CPU time).
    var currentWorkerPID: pid_t? { state.withLock { $0.current?.pid } }

    /// Waits until the current worker has exited, or kills it at `deadline`.
    func waitForExit(until deadline: UInt64) {
        state.withLock { $0.current }?.waitForExit(until: deadline)
    }


    private func watch(_ worker: WorkerProcess) {
        // Weakly: the worker keeps this closure, and must not keep itself.
        worker.whenWriterResumes { [self, weak worker] in if let worker { sendWaiting(to: worker) } }
        worker.startReading(
            onHung: { [self] worker in checkHung(worker) },
            onDenied: { [self] denied in logDenied(denied) },
            onExit: { [self] worker, death, begun, unstarted in workerExited(worker, death, begun, unstarted) })
    }

    /// Replaces `worker` once a handler it began has gone on `hungAfter`
    /// past its request's `Timeout`; looks while some have not returned.
    private func checkHung(_ worker: WorkerProcess) {
        spawner.schedule(after: WorkerProcess.hungCheckInterval) { [self] in
            let (stuck, again) = worker.checkHung()
            if stuck {
                replaceHung(worker)
            } else if again {
                checkHung(worker)
            }
        }
    }

    /// Logs each kind of call the sandbox turned away once per plug-in,
    /// however many workers and requests try it again.
    private func logDenied(_ denied: DeniedCalls) {
        let new = state.withLock { state -> DeniedCalls in
            let new = denied.subtracting(state.deniedLogged)
            state.deniedLogged.formUnion(new)
            return new
        }
        for (_, text) in new.explained {
            logger.warning("plug-in '\(pluginName)' \(text)")
        }
    }

    /// A worker ended. The requests it had begun die with it (never
    /// replayed); those it had not begun go to the next worker, in order.
    private func workerExited(_ worker: WorkerProcess, _ death: WorkerDeath, _ owed: [HandlerCall],
                              _ unstarted: [WorkerRequest]) {
        let outcome = death.outcome(plugin: pluginName)
        for call in owed { call.deliver(.outcome(outcome)) }
        if case .sandboxViolation(let call, _) = death { metrics?.violation(call: call) }
        let now = MonotonicClock.now
        enum Next { case nothing, restart(Duration), giveUp, quarantine(Duration, number: Int) }
        let next = state.withLock { state -> Next in
            // A retired worker (hung, replaced or removed) ended as planned;
            // requests waiting for its successor are not its business.
            guard state.current === worker else { return .nothing }
            state.current = nil
            // First in line for the next worker (or refused with the rest).
            state.waiting.prepend(unstarted)
            if state.stopped { return .giveUp }
            switch state.supervision.workerDied(at: now, explained: !owed.isEmpty || worker.hasAnswered) {
            case .restart(let delay):
                return .restart(delay)
            case .quarantine(let cooldown, let number, let crashes):
                state.disabledReason = "plug-in '\(pluginName)' crashed \(crashes) times within \(Self.seconds(policy.window)) and is disabled for \(Self.seconds(cooldown)) (quarantine; SIGHUP or a change of its file ends it sooner)"
                logger.error("\(state.disabledReason!)")
                return .quarantine(cooldown, number: number)
            }
        }
        switch next {
        case .restart, .quarantine: metrics?.workerEnded(WorkerEndCause(death))
        case .nothing, .giveUp: break
        }
        switch next {
        case .nothing:
            // Its successor (or the reason there is none) takes them.
            for item in unstarted { invoke(handler: item.handler, request: item.request, call: item.call) }
        case .restart(let delay):
            logger.warning("worker of plug-in '\(pluginName)' \(death.description); restarting in \(delay)")
            scheduleStart(after: delay)
        case .giveUp:
            failWaiting()
        case .quarantine(let cooldown, let number):
            metrics?.quarantined(true)
            failWaiting()
            spawner.schedule(after: cooldown) { [self] in endQuarantine(number) }
        }
    }

    /// The cool-down of quarantine `number` is over: try a worker again,
    /// unless that quarantine already ended (SIGHUP, a file change) or the
    /// plug-in is stopping.
    private func endQuarantine(_ number: Int) {
        let due = state.withLock { state in
            state.supervision.quarantineNumber == number && state.disabledReason != nil && !state.stopped
        }
        guard due else { return }
        // Said once it is true: a request read after this line waits for the
        // new worker instead of being refused as still quarantined.
        if reload(byOperator: false) { logger.notice("plug-in '\(pluginName)': quarantine over; starting a worker") }
    }

    /// "1.5 s", for log lines and messages people read.
    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = attoseconds / 100_000_000_000_000_000
        return tenths == 0 ? "\(seconds) s" : "\(seconds).\(tenths) s"
    }

    /// A handler had not returned a second after its deadline: start a
    /// fresh worker for new requests; the stuck one stops once its other
    /// requests are done.
    private func replaceHung(_ worker: WorkerProcess) {
        // Stopping, a handler cut off by the grace period did not hang, and
        // no new request will need a worker: the host shuts this one down
        // with the others (its hook runs if it can; it is killed if not).
        guard !hostStopping() else { return }
        let replace = state.withLock { state -> Bool in
            guard state.current === worker, !state.stopped else { return false }
            state.current = nil
            return true
        }
        guard replace else { return }
        logger.warning("a handler of plug-in '\(pluginName)' hung past its deadline; replacing its worker")
        metrics?.workerEnded(.hang)
        worker.retire()
        scheduleStart(after: .zero)
    }

    private func scheduleStart(after delay: Duration) {
        let start = state.withLock { state -> Bool in
            guard !state.restarting, state.current == nil, !state.stopped else { return false }
            state.restarting = true
            return true
        }
        guard start else { return }
        spawner.schedule(after: delay) { [self] in
            let needed = state.withLock { state -> Bool in
                guard state.stopped && state.waiting.isEmpty else { return true }
                state.restarting = false
                return false
            }
            guard needed else { return }
            let worker: WorkerProcess
            do {
                worker = try WorkerLauncher.start(executable: executable, pluginPath: path, security: security,
                                                    sandboxing: sandboxing, taken: takenRoutes(),
                                                    zygote: spawner.zygote(for: executable), output: spawner.output)
            } catch {
                disable("plug-in '\(pluginName)' could not be restarted: \(error)")
                return
            }
            guard worker.ready.routes == routes else {
                worker.discard()
                disable("plug-in '\(pluginName)' registered different routes after a restart; reload it (SIGHUP)")
                return
            }
            // Current before it is watched: if it dies at once, its exit
            // must find it current, or no one would start the next one.
            let (waiting, stopped) = state.withLock { state in
                state.restarting = false
                state.current = worker
                return (state.waiting.takeAll(), state.stopped)
            }
            metrics?.workerStarts.add()
            metrics?.workerRestarts.add()
            watch(worker)
            logger.info("restarted plug-in '\(pluginName)' in worker \(worker.pid)")
            // If it dies while these go out, the rest wait for its successor
            // (they were never sent, so nothing is replayed).
            for item in waiting where !worker.send(handler: item.handler, request: item.request, call: item.call) {
                invoke(handler: item.handler, request: item.request, call: item.call)
            }
            // Retired while it started: it answers what waited for it, then stops.
            if stopped { worker.retire() }
        }
    }

    /// Sends what waited while `worker` was not reading its requests, now
    /// that it reads again; what it turns away again waits, first in line.
    private func sendWaiting(to worker: WorkerProcess) {
        let waiting = state.withLock { state -> [WorkerRequest] in
            state.current === worker ? state.waiting.takeAll() : []
        }
        for (position, item) in waiting.enumerated() {
            guard worker.send(handler: item.handler, request: item.request, call: item.call) else {
                let rest = waiting[position...]
                let sendNow = state.withLock { state -> Bool in
                    state.waiting.prepend(rest)
                    // Replaced meanwhile: its successor may have started
                    // before these were back in line.
                    return state.current !== worker && state.current != nil
                }
                if sendNow, let next = state.withLock({ $0.current }) { sendWaiting(to: next) }
                return
            }
        }
    }

    private func disable(_ reason: String) {
        logger.error("\(reason)")
        state.withLock { state in
            state.restarting = false
            state.disabledReason = reason
        }
        failWaiting()
    }

    private func failWaiting() {
        let (waiting, reason, successor) = state.withLock { state in
            (state.waiting.takeAll(), state.disabledReason ?? "plug-in '\(pluginName)' is stopping", state.successor)
        }
        for item in waiting {
            if let successor {
                forward(handler: item.handler, request: item.request, call: item.call, to: successor)
            } else {
                item.call.deliver(.outcome(HostError.unavailable(reason)))
            }
        }
    }
}
