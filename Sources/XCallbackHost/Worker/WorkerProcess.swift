import CHostSupport
import Logging
import Synchronization
import XCallbackBridge
import XCallbackMetrics
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL
import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One worker process running one plug-in, seen from the host: requests go
/// out pipelined over the socketpair; answers come back on a reader thread.
final class WorkerProcess: Sendable {
    let pid: pid_t
    let ready: Ready
    /// Its plug-in's slot in each input's shares (`ShareSlots`), which
    /// count every request its lane takes.
    let shareSlot: Int
    private let socket: Int32
    /// Which requests the worker began; nil if the page could not be made
    /// (then every request in flight at a crash counts as begun).
    private let progress: WorkerProgress?
    /// The sandbox it entered (nil: `--sandbox off`), and the host's end of
    /// its seccomp filter.
    private let sandbox: SandboxPlan?
    private let supervisor: SandboxSupervisor?
    private let parent: WorkerParent
    private let writer: WorkerRequestWriter
    private let reader: UncheckedFrameReader
    private let state = Lock(State())
    /// The next frame id; taken under the writer's lock, so frames go out in
    /// id order.
    private let nextID = Atomic<UInt64>(1)
    /// Some request got its result from this worker.
    private let answered = Atomic<Bool>(false)
    /// Requests the input thread's lane sent (made at its first).
    private let lane = LazySlots()
    /// Set once the worker exited or retires: the lane sends nothing after
    /// that (see `closeLane`).
    private let laneClosed = Atomic<Bool>(false)
    /// Where the reply thread reads an answer's parameters in place.
    private let answerParameters = UncheckedParameters()
    /// Becomes true once the process has been reaped.
    private let ended = ConditionLock(false)
    /// Set once the group watcher (if any) is done with the worker's pid.
    private let groupWatched: ConditionLock<Bool>
    /// What to do once the writer's flusher, which turned a sender away,
    /// has written everything (`whenWriterResumes`).
    private let writerResumed = Lock<(@Sendable () -> Void)?>(nil)

    /// What the worker reported once the plug-in loaded.
    struct Ready: Sendable {
        var info: PluginInfo
        var routes: [String]
        /// The C declaration of each route that calls a bound function
        /// (route, declaration).
        var signatures: [QueryParameter] = []
        /// Routes it asked for that the host named taken (pattern, owner).
        var refused: [QueryParameter] = []
    }

    private struct State {
        var calls: [UInt64: WorkerRequest] = [:]
        var exited = false
        /// No new requests; stop once the in-flight ones are answered.
        var retiring = false
        var onHung: (@Sendable (WorkerProcess) -> Void)?
        /// Requests answered `Timeout` whose handler has not returned, each
        /// with when the host first saw the worker had begun it (0: not
        /// yet): one begun `hungAfter` ago and still there has hung.
        var unreturned: [UInt64: UInt64] = [:]
        /// `onHung` was told, and `checkHung` not yet found nothing left.
        var hungCheckDue = false
    }

    /// How far the thread reading this worker's answers has got, for
    /// `checkHung`: everything the worker wrote before this monotonic time
    /// is handled; and when the read it waits in began (0: it is handling
    /// what it read, or writing records). A host held up on its own output
    /// must not take the answers it has not read yet for a hung handler.
    private let answersHandledUntil = Atomic<UInt64>(0)
    private let readingSince = Atomic<UInt64>(0)

    /// How long a handler may go on past its request's `Timeout` before its
    /// worker is taken for stuck in it. Not at once: a worker that is
    /// behind begins a request just before its deadline, and returns a
    /// moment after.
    static let hungAfter: Duration = .seconds(1)
    /// How often `checkHung` looks, while there is something to look at.
    static let hungCheckInterval: Duration = .milliseconds(250)
    /// At most this many requests not yet begun are watched: a worker that
    /// says it begins nothing cannot make the list grow without end.
    static let maxUnbegunWatched = Int(InputLoop.maxInFlight)

    /// A worker whose handshake `WorkerLauncher` has seen through.
    init(pid: pid_t, socket: Int32, progress: WorkerProgress?, sandbox: SandboxPlan?,
                 supervisor: SandboxSupervisor?, reader: FrameReader, parent: WorkerParent, ready: Ready) {
        self.pid = pid
        self.parent = parent
        self.socket = socket
        self.progress = progress
        self.sandbox = sandbox
        self.supervisor = supervisor
        self.groupWatched = ConditionLock(true)
        self.reader = UncheckedFrameReader(reader)
        self.ready = ready
        shareSlot = ShareSlots.slot(of: ready.info.name)
        self.writer = WorkerRequestWriter(descriptor: socket, onResumed: { [writerResumed] in writerResumed.withLock { $0 }?() })
    }

    /// Ends the worker's process group as soon as the worker exits. Needed
    /// only where a plug-in can start processes: they inherit the worker's
    /// socket to the host, so the host would never see it close while one
    /// of them lives.
    private func watchGroup() {
        let exitEvent = xcallback_pidfd_open(pid)
        guard exitEvent >= 0 else { return }
        groupWatched.withLock { $0 = false }
        Threads.detach { [self] in
            var event = pollfd(fd: exitEvent, events: Int16(POLLIN), revents: 0)
            while poll(&event, 1, -1) < 0 && errno == EINTR {}
            close(exitEvent)
            kill(-pid, SIGKILL)
            groupWatched.withLock { $0 = true }
            groupWatched.broadcast()
        }
    }

    /// Reads answers until the worker ends, then reports the requests it
    /// still owed: those it had begun (never replayed: they become
    /// `PluginCrashed`), and those it never began, for the next worker.
    /// `onDenied` hears of each kind of call the sandbox turned away, the
    /// first time this worker tries it.
    func startReading(onHung: @escaping @Sendable (WorkerProcess) -> Void,
                      onDenied: @escaping @Sendable (DeniedCalls) -> Void,
                      onExit: @escaping @Sendable (WorkerProcess, WorkerDeath, _ begun: [HandlerCall], _ unstarted: [WorkerRequest]) -> Void) {
        state.withLock { $0.onHung = onHung }
        supervisor?.onDenied(onDenied)
        if !parent.endsGroupOnExit, sandbox.map({ $0.capabilities.processes > 0 }) ?? true { watchGroup() }
        Threads.detach { [self] in
            // Records and chained frames this thread produces are written
            // in one batch when it has read all the worker sent (not one
            // write per answer).
            BatchingThread.markCurrent()
            var readBegan: UInt64 = 0
            var readEmptied = false
            var brokeProtocol = false
            loop: while true {
                let next = reader.reader.next(beforeBlocking: {
                    BatchingThread.flushDeferred()
                    // All the last read took is handled now; if it emptied
                    // the socket, so is all the worker wrote before it began.
                    if readEmptied { answersHandledUntil.store(readBegan, ordering: .releasing) }
                    readBegan = MonotonicClock.now
                    readingSince.store(readBegan, ordering: .releasing)
                }, afterReading: { emptied in
                    readingSince.store(0, ordering: .releasing)
                    readEmptied = emptied
                }, intercept: takeInPlace)
                switch next {
                case .frame(let frame):
                    switch frame {
                    case .result, .returned: handle(frame)
                    // A frame no worker sends once it is ready: its own
                    // `ready` after one its plug-in forged on the socket
                    // while it loaded (`WorkerFrame.sync`). The worker is
                    // ended at once, as `PluginProbe` refuses it.
                    default:
                        brokeProtocol = true
                        parent.signalGroup(pid, SIGKILL)
                        break loop
                    }
                case .end, .malformed, .intercepted: break loop
                }
            }
            BatchingThread.flushDeferred()
            // After the watcher: it must not signal a reaped pid.
            groupWatched.wait(until: { $0 }) { _ in }
            let exit = parent.reap(pid, grace: 1000)
            writer.close()
            close(socket)
            // Reaped: its pid may belong to someone else now, so nothing
            // below may signal it. The endpoint's callbacks are let go: one
            // that holds this worker would keep it, and its pidfd, forever.
            state.withLock { state in
                state.exited = true
                state.onHung = nil
            }
            writerResumed.withLock { $0 = nil }
            closeLane()
            // Reaped: every store the worker made is visible now. The page
            // is its word, checked against the host's own records.
            let page = progress?.report(lastSent: nextID.load(ordering: .relaxed) &- 1)
            // What it answered but never sent: the plug-in completed those
            // requests, so they get their answers, not PluginCrashed.
            for frame in page?.unsentFrames ?? [] { handle(frame) }
            // Requests are begun in id order, so one the worker answered in
            // any way, and every one before it, was begun, whatever the
            // page says.
            let lastBegun = max(page?.lastBegun ?? .max, reader.highestAnswered)
            let adopted = adoptAll(startedBefore: .max)
            let (begun, unstarted) = state.withLock { state -> ([HandlerCall], [WorkerRequest]) in
                state.exited = true
                defer { state.calls.removeAll() }
                var begun: [HandlerCall] = []
                var unstarted: [(id: UInt64, item: WorkerRequest)] = []
                for (id, entry) in adopted {
                    state.calls[id] = WorkerRequest(handler: entry.handler, request: entry.request.fields, call: entry.request.call)
                }
                // A page that says the worker began none of what it was
                // sent is the one claim a lying worker gains by: the oldest
                // request, the one it was running, would run again on the
                // next worker, and again. That request goes on once at most.
                let oldest = state.calls.keys.min() ?? 0
                let claimsNoneBegun = lastBegun < oldest
                for (id, entry) in state.calls {
                    if id <= lastBegun || (claimsNoneBegun && id == oldest && !entry.call.mayRunAfterCrash()) {
                        begun.append(entry.call)
                    } else {
                        unstarted.append((id, entry))
                    }
                }
                return (begun, unstarted.sorted { $0.id < $1.id }.map(\.item))
            }
            ended.withLock { $0 = true }
            ended.broadcast()
            onExit(self, WorkerDeath(exit: exit, page: page, sandbox: sandbox, supervisor: supervisor, brokeProtocol: brokeProtocol),
                   begun, unstarted)
            BatchingThread.flushDeferred()
        }
    }

    /// An answer from the worker. One for a request no longer waited for
    /// (timed out, or already read from the socket) is dropped.
    private func handle(_ frame: WorkerFrame) {
        switch frame {
        case .result(let id, let result):
            noteAnswered(id)
            answered.store(true, ordering: .relaxed)
            // A late answer (after `Timeout`) says its handler got on.
            let call = adoptOne(id)?.call ?? state.withLock { state in
                state.unreturned.removeValue(forKey: id)
                return state.calls.removeValue(forKey: id)?.call
            }
            call?.deliver(result)
            retireIfDrained()
        case .returned(let id):
            noteAnswered(id)
            if lane.load()?.markReturned(id) == true { return }
            state.withLock { state in
                state.calls[id]?.returned = true
                state.unreturned.removeValue(forKey: id)
            }
        default:
            break
        }
    }

    /// The host's own evidence of how far the worker got: the highest id,
    /// among those it was sent, that it answered (reader thread only).
    private func noteAnswered(_ id: UInt64) {
        if id > reader.highestAnswered, id < nextID.load(ordering: .relaxed) { reader.highestAnswered = id }
    }

    /// Whether any request got its result from this worker: a worker that
    /// did, then crashed, was not in a crash loop.
    var hasAnswered: Bool { answered.load(ordering: .relaxed) }

    /// Sends a request; false when the worker is gone or retiring. A call
    /// the host already gave up on is dropped (and counts as sent).
    func send(handler: Int, request: RequestFields, call: HandlerCall) -> Bool {
        // A worker that stopped reading holds its writer: a request queued
        // behind that write would hold the input thread that sent it, and
        // then every plug-in's requests. It waits in the endpoint instead
        // (`whenWriterResumes`), or for the next worker.
        guard !writer.turnAwayIfBusy() else { return false }
        var sent = false
        // Ids are taken under the writer's lock, so frames go out in id
        // order: the worker begins them in that order, which is what makes
        // `WorkerProgress` a single number.
        writer.append { bytes in
            let id = state.withLock { state -> UInt64? in
                guard !state.exited, !state.retiring else { return nil }
                let id = nextID.add(1, ordering: .relaxed).oldValue
                state.calls[id] = WorkerRequest(handler: handler, request: request, call: call)
                return id
            }
            guard let id else { return }
            sent = true
            guard call.whenAbandoned({ [self] in abandon(id) }) else {
                // It timed out while it waited for a worker: its outcome is out,
                // so running it now would act behind the caller's back (a hang
                // would also stick a worker nobody watches).
                state.withLock { _ = $0.calls.removeValue(forKey: id) }
                return
            }
            WorkerFrame.request(id: id, handler: UInt32(handler), fields: request).encode(into: &bytes)
        }
        return sent
    }

    /// The host answered `Timeout` for `id`. If its handler has not
    /// returned, it is watched: `onHung` hears of it (once until
    /// `checkHung` finds nothing left), to call `checkHung` a while later.
    private func abandon(_ id: UInt64) {
        let onHung = state.withLock { state -> (@Sendable (WorkerProcess) -> Void)? in
            guard let entry = state.calls.removeValue(forKey: id), !entry.returned, !state.exited else { return nil }
            // A request the worker has not begun hung nothing yet: the
            // worker is behind, not stuck. But it may begin it later and
            // hang there, so it is watched until it is begun and returns.
            let begun = hasBegun(id)
            guard begun || state.unreturned.count < Self.maxUnbegunWatched else { return nil }
            state.unreturned[id] = begun ? MonotonicClock.now : 0
            guard !state.hungCheckDue, let onHung = state.onHung else { return nil }
            state.hungCheckDue = true
            return onHung
        }
        onHung?(self)
        retireIfDrained()
    }

    /// Whether the worker says it began request `id`. The page is its
    /// word; one that lies only keeps itself from being replaced, as it
    /// could by saying that every handler returned.
    private func hasBegun(_ id: UInt64) -> Bool {
        guard let progress else { return true }
        return progress.lastBegunClaim >= id
    }

    /// Looks at the requests answered `Timeout` whose handler has not
    /// returned: `stuck` when one has run for `hungAfter` since the host
    /// first saw it begun; `again` when some are left to look at
    /// (`hungCheckInterval` later).
    func checkHung() -> (stuck: Bool, again: Bool) {
        state.withLock { state -> (stuck: Bool, again: Bool) in
            let now = MonotonicClock.now
            let handled = answersHandled(now: now)
            var stuck = false
            if !state.exited {
                for (id, begunAt) in state.unreturned {
                    if begunAt == 0 {
                        if hasBegun(id) { state.unreturned[id] = now }
                    } else if handled >= begunAt &+ Self.hungAfter.nanoseconds {
                        // Not merely `hungAfter` ago: the host has read
                        // and handled all the worker wrote until then.
                        stuck = true
                    }
                }
            }
            // A stuck worker is replaced: nothing more to learn from it.
            if stuck || state.exited { state.unreturned = [:] }
            state.hungCheckDue = !state.unreturned.isEmpty
            return (stuck, state.hungCheckDue)
        }
    }

    /// The monotonic time before which everything the worker wrote is
    /// handled. A read that has waited a whole check interval found the
    /// socket empty: all the worker wrote until that long ago is handled.
    private func answersHandled(now: UInt64) -> UInt64 {
        let handled = answersHandledUntil.load(ordering: .acquiring)
        let waiting = readingSince.load(ordering: .acquiring)
        let interval = Self.hungCheckInterval.nanoseconds
        guard waiting != 0, now &- waiting >= interval else { return handled }
        return max(handled, now &- interval)
    }

    /// Whether a write to the worker is under way on its flusher.
    var isWriterBusy: Bool { writer.isStuck(longerThan: 0) }

    /// Runs `body` each time a write to the worker goes through that
    /// `send` turned a request away from: the requests waiting can go now.
    func whenWriterResumes(_ body: @escaping @Sendable () -> Void) {
        writerResumed.withLock { $0 = body }
    }

    /// Takes no new requests; the process stops once nothing is in flight.
    func retire() {
        state.withLock { $0.retiring = true }
        closeLane()
        retireIfDrained()
    }

    private func retireIfDrained() {
        // Set by `retire` before it looks: most answers come to a worker
        // that is not retiring, and need no lock to learn it.
        guard laneClosed.load(ordering: .sequentiallyConsistent) else { return }
        let laneDrained = lane.load()?.isEmpty ?? true
        let stop = state.withLock { $0.retiring && $0.calls.isEmpty && !$0.exited } && laneDrained
        if stop { parent.signal(pid, SIGKILL) }
    }

    /// Asks the worker to run the plug-in's shutdown hook and exit. Never
    /// blocks: a thread stuck writing to a worker that stopped reading holds
    /// the writer, and `waitForExit` must still get to kill that worker.
    func shutdown() {
        state.withLock { $0.retiring = true }
        closeLane()
        Threads.detach { [writer] in writer.append { WorkerFrame.shutdown.encode(into: &$0) } }
    }

    /// Shuts down a worker nobody will read from (refused once it loaded,
    /// or started again at once): its hook runs, and it is reaped on a
    /// thread of its own, killed if it has not exited within a second, so
    /// it neither lingers as a zombie nor stays counted as a writer of its
    /// scratch folder (which would keep the host from removing that).
    func discard() {
        shutdown()
        Threads.detach { [self] in
            _ = parent.reap(pid, grace: 1000)
            state.withLock { $0.exited = true }
            writer.close()
            close(socket)
        }
    }

    /// Kills the worker if writing to it has been stuck for a second: it
    /// stopped reading its socket (the host is stopping, and waits for that
    /// write).
    func killIfStuck() {
        guard writer.isStuck(longerThan: 1_000_000_000), !state.withLock({ $0.exited }) else { return }
        parent.signal(pid, SIGKILL)
    }

    /// Waits for the process to end; kills it if `deadline` comes first.
    func waitForExit(until deadline: UInt64) {
        let exited = ended.wait(until: { $0 }, deadline: deadline) { $0 }
        if !exited {
            parent.signal(pid, SIGKILL)
            ended.wait(until: { $0 }) { _ in }
        }
    }
}

// MARK: The lane

extension WorkerProcess {
    /// Sends a line the input thread's lane parsed as its request frame
    /// (`RequestFrame.writeLine`), keeping the frame in a slot
    /// (`WorkerSlots`); false, having sent nothing, when the lane is closed,
    /// the slot is busy or a value does not decode (then `send` takes it).
    /// Its `request_id` comes from `owner`, taken only once it goes.
    func sendFast(handler: Int, line: UnsafeBufferPointer<UInt8>, parsed: UnsafePointer<RequestLine>,
                  callbacks: (success: UnsafeBufferPointer<UInt8>?, error: UnsafeBufferPointer<UInt8>?,
                              cancel: UnsafeBufferPointer<UInt8>?),
                  sequence: UInt64, sink: OutputSink, owner: any WorkerLaneOwner,
                  counts: @autoclosure () -> PluginMetrics?) -> Bool {
        guard !writer.turnAwayIfBusy() else { return false }
        let slots = lane.load() ?? makeLane(owner: owner, counts: counts())
        var sent = false
        var withdrawn = false
        writer.append { bytes in
            guard !laneClosed.load(ordering: .sequentiallyConsistent) else { return }
            let id = nextID.load(ordering: .relaxed)
            guard let slot = slots.freeSlot(for: id) else { return }
            // The frame is built in the slot, which keeps it: the request
            // id is taken only once every value decoded. From the owner,
            // not a capturing closure: one would retain the dispatcher,
            // whose weak references make that a slow retain.
            var requestID: UInt64 = 0
            slot.pointee.frame.removeAll(keepingCapacity: true)
            guard RequestFrame.writeLine(id: id, handler: UInt32(handler), line: line, parsed: parsed,
                                         requestID: { requestID = owner.nextID(); return requestID },
                                         into: &slot.pointee.frame)
            else { return }
            nextID.store(id + 1, ordering: .relaxed)
            slot.pointee.id = id
            slot.pointee.sequence = sequence
            slot.pointee.requestID = requestID
            slot.pointee.handler = handler
            slot.pointee.sink = sink
            slot.pointee.callbacks.removeAll(keepingCapacity: true)
            slot.pointee.successCount = Self.append(callbacks.success, to: &slot.pointee.callbacks)
            slot.pointee.errorCount = Self.append(callbacks.error, to: &slot.pointee.callbacks)
            slot.pointee.cancelCount = Self.append(callbacks.cancel, to: &slot.pointee.callbacks)
            // Out before the slot is published: once it is, another thread
            // may take it.
            let frameStart = bytes.count
            slot.pointee.frame.withUnsafeBufferPointer { bytes.append(contentsOf: $0) }
            let started = MonotonicClock.coarseNow
            slot.pointee.fineStarted = slots.counts == nil ? 0 : slots.sampler.fineStart(tick: started)
            slots.publish(id, started: started)
            // Against `closeLane`: either it sees this slot, or this sees the
            // lane closed and takes the frame back before it is written.
            atomicMemoryFence(ordering: .sequentiallyConsistent)
            if laneClosed.load(ordering: .sequentiallyConsistent) {
                bytes.removeSubrange(frameStart...)
                // Unless the exit scan took it first: then it waits for the
                // next worker like any request this one never began.
                withdrawn = slots.unpublish(id)
                sent = !withdrawn
                return
            }
            sent = true
        }
        // A retiring worker may have left its stop to this request.
        if withdrawn { retireIfDrained() }
        return sent
    }

    /// The lane sends nothing from now on. Then the requests still in it
    /// are the ones its table shows (the exit scan, `retireIfDrained`).
    private func closeLane() {
        laneClosed.store(true, ordering: .sequentiallyConsistent)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
    }

    private static func append(_ callback: UnsafeBufferPointer<UInt8>?, to bytes: inout [UInt8]) -> Int {
        guard let callback else { return -1 }
        bytes.append(contentsOf: callback)
        return callback.count
    }

    private func makeLane(owner: any WorkerLaneOwner, counts: PluginMetrics?) -> WorkerSlots {
        let made = WorkerSlots(owner: owner, counts: counts)
        let slots = lane.storeIfNil(made)
        if slots === made { owner.watch(self) }
        return slots
    }

    /// The reply thread's first look at a frame: a success or cancel for a
    /// request in the lane becomes its record here, from the frame's bytes.
    private func takeInPlace(kind: UInt8, payload: UnsafeRawBufferPointer) -> FrameReader.Interception {
        guard let slots = lane.load() else { return .decode }
        if kind == WorkerFrame.returnedKind {
            guard let id = WorkerFrame.returnedID(payload), slots.markReturned(id) else { return .decode }
            noteAnswered(id)
            return .consumed
        }
        guard kind == WorkerFrame.resultKind,
              let (id, answer) = ResultFrame.answerInPlace(payload, into: &answerParameters.parameters)
        else { return .decode }
        let written: Void? = slots.take(id) { request, _ in
            let base = payload.baseAddress!.assumingMemoryBound(to: UInt8.self)
            answerParameters.parameters.withUnsafeBufferPointer { parameters in
                slots.owner.end(.bytes(answer, parameters: parameters, in: base), ofSlot: &request,
                                counts: slots.unretainedCounts, sampler: slots.sampler, shareSlot: shareSlot)
            }
        }
        guard written != nil else { return .decode }
        noteAnswered(id)
        answered.store(true, ordering: .relaxed)
        retireIfDrained()
        return .consumed
    }

    /// Request `id` from the lane, now on the general path.
    private func adoptOne(_ id: UInt64) -> AdoptedRequest? {
        guard let slots = lane.load() else { return nil }
        return slots.take(id) { request, _ in
            slots.owner.adopt(&request, started: slots.started(id), plugin: ready.info.name, counts: slots.counts,
                              shareSlot: shareSlot)
        }
    }

    /// Every request in the lane sent before `cutoff`, now on the general
    /// path, with its id, handler and whether its handler returned.
    fileprivate func adoptAll(startedBefore cutoff: UInt64)
        -> [(id: UInt64, (handler: Int, returned: Bool, request: AdoptedRequest))] {
        guard let slots = lane.load() else { return [] }
        return slots.takeAll(startedBefore: cutoff) { request, returned in
            (request.id, (request.handler, returned,
                          slots.owner.adopt(&request, started: slots.started(request.id), plugin: ready.info.name,
                                            counts: slots.counts, shareSlot: shareSlot)))
        }
    }

    /// Whether it has exited and everything it held has been answered or
    /// handed on.
    var hasEnded: Bool { ended.withLock { $0 } }

    /// Requests this worker's lane has sent and not seen answered.
    var laneRequestCount: Int { lane.load()?.count ?? 0 }

    /// The deadline timer's side: requests in the lane past their deadline
    /// join the general path, which answers them `Timeout` (and, for a
    /// handler that never returned, reports the worker hung).
    func expireSlots(startedBefore cutoff: UInt64) {
        guard let slots = lane.load(), !slots.isEmpty else { return }
        // Taken and tracked under the state lock, in one step: a `returned`
        // frame the reply thread reads meanwhile waits for the entry, and a
        // retiring worker is not taken for drained between the two.
        let expired = state.withLock { state -> [(id: UInt64, request: AdoptedRequest, tracked: Bool)] in
            adoptAll(startedBefore: cutoff).map { id, entry in
                guard !state.exited else { return (id, entry.request, false) }
                state.calls[id] = WorkerRequest(handler: entry.handler, request: entry.request.fields,
                                           call: entry.request.call, returned: entry.returned)
                return (id, entry.request, true)
            }
        }
        for (id, request, tracked) in expired {
            if tracked { request.call.whenAbandoned { [self] in abandon(id) } }
            request.expire()
        }
    }
}

/// The reply thread's reusable list of an answer's parameters.
private final class UncheckedParameters: @unchecked Sendable {
    // @unchecked: only the worker's reply thread touches it, so the
    // runtime's exclusivity check (two calls per answer) is off for it.
    @exclusivity(unchecked) var parameters: [ByteParameter] = []
}

/// Only the worker's reader thread (after the handshake) touches it.
private final class UncheckedFrameReader: @unchecked Sendable {
    let reader: FrameReader
    /// See `WorkerProcess.noteAnswered`.
    var highestAnswered: UInt64 = 0
    init(_ reader: FrameReader) { self.reader = reader }
}
