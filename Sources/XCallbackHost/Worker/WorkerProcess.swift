import XCallbackBridge
import XCallbackSystem
import XCallbackURL
import CHostSupport
import Logging
import XCallbackSandbox
import Synchronization
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
    }

    private struct State {
        var calls: [UInt64: InFlight] = [:]
        var exited = false
        /// No new requests; stop once the in-flight ones are answered.
        var retiring = false
        var onHung: (@Sendable (WorkerProcess) -> Void)?
    }

    private struct InFlight {
        var handler: Int
        var request: RequestFields
        var call: HandlerCall
        /// The handler returned (its completion may still come later).
        var returned = false
    }

    /// A request the worker never began: the next worker may run it.
    struct Unstarted: Sendable {
        var handler: Int
        var request: RequestFields
        var call: HandlerCall
    }

    /// Why starting a worker failed.
    struct StartError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    private init(pid: pid_t, socket: Int32, progress: WorkerProgress?, sandbox: SandboxPlan?,
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
        self.writer = WorkerRequestWriter(descriptor: socket, onResumed: { [writerResumed] in writerResumed.withLock { $0 }?() })
    }

    /// Starts `executable __worker PATH`, waits for its handshake (up to
    /// `handshakeTimeout` seconds), and returns it ready for requests.
    /// `taken` are the routes other plug-ins own (pattern, owner).
    static func start(executable: String, pluginPath: String, security: FileSecurity, sandboxing: WorkerSandboxing,
                      taken: [QueryParameter] = [], zygote: ZygoteClient? = nil, output: WorkerOutputRelay?,
                      handshakeTimeout: Int32 = 10) throws(StartError) -> WorkerProcess {
        try launch(executable: executable, pluginPath: pluginPath, security: security, sandboxing: sandboxing,
                   taken: taken, zygote: zygote, output: output).ready(handshakeTimeout: handshakeTimeout)
    }

    /// A worker started and greeted, whose handshake is still to come: many
    /// can be launched one after another (from the spawner thread) and then
    /// waited for, so they load their plug-ins side by side.
    struct Launch: @unchecked Sendable {
        // @unchecked: owned by whoever waits for it, once.
        fileprivate let pid: pid_t
        fileprivate let socket: Int32
        fileprivate let progress: WorkerProgress?
        fileprivate let plan: SandboxPlan?
        fileprivate let supervisor: SandboxSupervisor?
        fileprivate let pluginPath: String
        fileprivate let parent: WorkerParent
        /// Names its output in the host's log.
        fileprivate let output: WorkerOutputRelay.Channel?
        /// The routes it was told other plug-ins own.
        let taken: [QueryParameter]

        /// Waits for the handshake (up to `handshakeTimeout` seconds).
        func ready(handshakeTimeout: Int32 = 10) throws(StartError) -> WorkerProcess {
            try WorkerProcess.handshake(self, timeout: handshakeTimeout)
        }
    }

    /// Everything of `start` but the wait for the handshake.
    static func launch(executable: String, pluginPath: String, security: FileSecurity, sandboxing: WorkerSandboxing,
                       taken: [QueryParameter] = [], zygote: ZygoteClient? = nil,
                       output: WorkerOutputRelay?) throws(StartError) -> Launch {
        // Opened and checked here, for every start and restart: the worker
        // loads this descriptor, so a file swapped since the last check can
        // never run unchecked.
        let file: PluginFile
        do {
            file = try PluginFile.open(pluginPath, security: security)
        } catch {
            throw StartError(message: error.description)
        }
        defer { file.close() }
        // Read again for every start, like the file: the declaration and
        // the grants in force now are the ones this worker gets.
        let plan: SandboxPlan?
        do {
            plan = try sandboxing.plan(forPluginAt: pluginPath, security: security)
        } catch {
            throw StartError(message: error.description)
        }
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw StartError(message: "socketpair: \(String(cString: strerror(errno)))")
        }
        let (host, child) = (ends[0], ends[1])
        let shared = WorkerProgress.create()
        defer { if let shared { close(shared.descriptor) } }
        // The plug-in's stdout and stderr are pipes of the host's, never a
        // descriptor the host writes its records or its log to.
        let streams = ChildStreams(output?.open(label: pluginPath.split(separator: "/").last.map(String.init) ?? pluginPath))
        defer { streams.closeInHost() }
        var placements = [ChildDescriptors.Placement(descriptor: child, number: WorkerMain.socketDescriptor),
                          ChildDescriptors.Placement(descriptor: file.descriptor, number: WorkerMain.libraryDescriptor)]
        if let shared {
            placements.append(.init(descriptor: shared.descriptor, number: WorkerProgress.workerDescriptor))
        }
        // The channel the worker hands its seccomp listener to the host on.
        var supervision: [Int32] = [-1, -1]
        if plan != nil,
           socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &supervision) == 0 {
            placements.append(.init(descriptor: supervision[1], number: WorkerMain.supervisorDescriptor))
        }
        // What follows `__worker`: the same whether it is forked by the
        // zygote or executed (then its parent is the host).
        let workerArguments = { (parent: pid_t) -> [String] in
            [pluginPath, "--parent", String(parent), "--host", String(getpid())]
                + (security.allowInsecure ? [WorkerMain.allowInsecureFlag] : [])
                + (plan.map { [WorkerMain.sandboxOption, $0.encoded] } ?? [])
        }
        var pid = pid_t()
        var status: Int32 = 0
        var parent = WorkerParent.host
        if let zygote, case .success(let forked) = zygote.fork(arguments: workerArguments(zygote.pid),
                                                                 environment: ChildEnvironment.variables(for: plan),
                                                                 placements: placements + streams.placements) {
            pid = forked.pid
            parent = WorkerParent(forked: forked)
        } else {
            // No zygote, or it could not fork (it died, or a sanitizer's
            // thread made forking unsafe): the worker is executed, and its
            // parent is the host.
            switch HostChild.spawn(executable, arguments: [WorkerMain.subcommand] + workerArguments(getpid()),
                                   stdout: streams.stdout, stderr: streams.stderr, placing: placements, sandbox: plan) {
            case .success(let child): pid = child
            case .failure(let error): status = error.code
            }
        }
        close(child)
        if supervision[1] >= 0 { close(supervision[1]) }
        guard status == 0 else {
            if supervision[0] >= 0 { close(supervision[0]) }
            close(host)
            throw StartError(message: "cannot start a worker (\(executable)): \(HostChild.SpawnError(code: status))")
        }
        // Answering the worker's filter starts now: its plug-in's
        // constructors run before the handshake ends.
        let supervisor = supervision[0] >= 0 ? SandboxSupervisor(channel: supervision[0], endGroup: { [parent, pid] in parent.signalGroup(pid, SIGKILL) }) : nil
        if let supervisor { Threads.detach { supervisor.serve() } }
        var hello: [UInt8] = []
        WorkerFrame.hello(version: WorkerFrame.protocolVersion, taken: taken).encode(into: &hello)
        _ = write(host, hello, hello.count)
        return Launch(pid: pid, socket: host, progress: shared?.progress, plan: plan, supervisor: supervisor,
                      pluginPath: pluginPath, parent: parent, output: streams.channel, taken: taken)
    }

    private static func handshake(_ launch: Launch, timeout: Int32) throws(StartError) -> WorkerProcess {
        let (pid, host, pluginPath) = (launch.pid, launch.socket, launch.pluginPath)
        var waiting = pollfd(fd: host, events: Int16(POLLIN), revents: 0)
        let reader = FrameReader(descriptor: host)
        let answer: FrameReader.Next = poll(&waiting, 1, timeout * 1000) > 0
            ? reader.next(beforeBlocking: {}) : .end
        switch answer {
        case .frame(.ready(let version, let info, let routes)) where version == WorkerFrame.protocolVersion:
            // The worker's word for what it loaded: the plug-in's name shows
            // in every log line about it, so it must be a name (a forged one
            // with newlines wrote whole log lines of the host's).
            if let problem = readyProblem(info: info, routes: routes) {
                close(host)
                launch.parent.signalGroup(pid, SIGKILL)
                _ = launch.parent.wait(for: pid)
                throw StartError(message: "\(PrintableText.escaping(pluginPath)): the worker's handshake \(problem); not started")
            }
            launch.output?.rename(info.name)
            let pluginInfo = PluginInfo(path: pluginPath, name: info.name, version: info.version, summary: info.summary,
                                        abiMajor: Int(info.abiMajor), abiMinor: Int(info.abiMinor))
            return WorkerProcess(pid: pid, socket: host, progress: launch.progress, sandbox: launch.plan,
                                 supervisor: launch.supervisor, reader: reader, parent: launch.parent,
                                 ready: Ready(info: pluginInfo, routes: routes))
        case .frame(.loadFailed(let message)):
            close(host)
            launch.parent.signalGroup(pid, SIGKILL)  // anything its constructors started
            _ = launch.parent.wait(for: pid)
            // The worker's word, which its plug-in's constructors could have
            // written: one line, escaped, cut, as any output of a plug-in.
            throw StartError(message: PrintableText.escaping(String(message.prefix(4096))))
        default:
            launch.parent.signalGroup(pid, SIGKILL)
            close(host)
            let exit = launch.parent.wait(for: pid)
            throw StartError(message: "\(pluginPath): the worker \(exit) before it was ready")
        }
    }

    /// What is wrong with what a worker said it loaded, if anything: a
    /// name as the loader checks it, and text of bounded size.
    private static func readyProblem(info: WorkerFrame.WireInfo, routes: [String]) -> String? {
        if let problem = PluginLoader.reportedIdentityProblem(name: info.name, version: info.version, summary: info.summary) {
            return problem
        }
        guard routes.count <= 65_536, routes.allSatisfy({ $0.utf8.count <= 4096 }) else {
            return "gave more than 65,536 routes, or one longer than 4 KiB"
        }
        return nil
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
                      onExit: @escaping @Sendable (WorkerProcess, WorkerDeath, _ begun: [HandlerCall], _ unstarted: [Unstarted]) -> Void) {
        state.withLock { $0.onHung = onHung }
        supervisor?.onDenied(onDenied)
        if !parent.endsGroupOnExit, sandbox.map({ $0.capabilities.processes > 0 }) ?? true { watchGroup() }
        Threads.detach { [self] in
            // Records and chained frames this thread produces are written
            // in one batch when it has read all the worker sent (not one
            // write per answer).
            BatchingThread.markCurrent()
            loop: while true {
                switch reader.reader.next(beforeBlocking: BatchingThread.flushDeferred, intercept: takeInPlace) {
                case .frame(let frame): handle(frame)
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
            // below may signal it.
            state.withLock { $0.exited = true }
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
            let (begun, unstarted) = state.withLock { state -> ([HandlerCall], [Unstarted]) in
                state.exited = true
                defer { state.calls.removeAll() }
                var begun: [HandlerCall] = []
                var unstarted: [(id: UInt64, item: Unstarted)] = []
                for (id, entry) in adopted {
                    state.calls[id] = InFlight(handler: entry.handler, request: entry.request.fields, call: entry.request.call)
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
                        unstarted.append((id, Unstarted(handler: entry.handler, request: entry.request, call: entry.call)))
                    }
                }
                return (begun, unstarted.sorted { $0.id < $1.id }.map(\.item))
            }
            ended.withLock { $0 = true }
            ended.broadcast()
            onExit(self, WorkerDeath(exit: exit, page: page, sandbox: sandbox, supervisor: supervisor),
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
            let call = adoptOne(id)?.call ?? state.withLock { $0.calls.removeValue(forKey: id)?.call }
            call?.deliver(result)
            retireIfDrained()
        case .returned(let id):
            noteAnswered(id)
            if lane.load()?.markReturned(id) == true { return }
            state.withLock { $0.calls[id]?.returned = true }
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
                state.calls[id] = InFlight(handler: handler, request: request, call: call)
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

    /// The host answered `Timeout` for `id`. If its handler never returned,
    /// the worker is stuck in it: report it hung so it can be replaced.
    private func abandon(_ id: UInt64) {
        let onHung = state.withLock { state -> (@Sendable (WorkerProcess) -> Void)? in
            guard let entry = state.calls.removeValue(forKey: id), !entry.returned else { return nil }
            return state.onHung
        }
        onHung?(self)
        retireIfDrained()
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
    /// Sends a request the input thread's lane filled in place, keeping it
    /// in a slot (`WorkerSlots`); false, having sent nothing, when the lane
    /// is closed or the slot is busy (then `send` takes it). `takeID`
    /// gives its `request_id`, taken only once it goes.
    func sendFast(handler: Int, request: NativeRequest, line: UnsafeBufferPointer<UInt8>,
                  callbacks: (success: UnsafeBufferPointer<UInt8>?, error: UnsafeBufferPointer<UInt8>?,
                              cancel: UnsafeBufferPointer<UInt8>?),
                  sequence: UInt64, sink: OutputSink, owner: any WorkerLaneOwner, takeID: () -> UInt64) -> Bool {
        guard !writer.turnAwayIfBusy() else { return false }
        let slots = lane.load() ?? makeLane(owner: owner)
        var sent = false
        var withdrawn = false
        writer.append { bytes in
            guard !laneClosed.load(ordering: .sequentiallyConsistent) else { return }
            let id = nextID.load(ordering: .relaxed)
            guard let slot = slots.freeSlot(for: id) else { return }
            nextID.store(id + 1, ordering: .relaxed)
            let requestID = takeID()
            request.assign(id: requestID)
            slot.pointee.id = id
            slot.pointee.sequence = sequence
            slot.pointee.requestID = requestID
            slot.pointee.handler = handler
            slot.pointee.sink = sink
            slot.pointee.line.removeAll(keepingCapacity: true)
            slot.pointee.line.append(contentsOf: line)
            slot.pointee.callbacks.removeAll(keepingCapacity: true)
            slot.pointee.successCount = Self.append(callbacks.success, to: &slot.pointee.callbacks)
            slot.pointee.errorCount = Self.append(callbacks.error, to: &slot.pointee.callbacks)
            slot.pointee.cancelCount = Self.append(callbacks.cancel, to: &slot.pointee.callbacks)
            slots.publish(id, started: MonotonicClock.coarseNow)
            // Against `closeLane`: either it sees this slot, or this sees the
            // lane closed and takes the slot back before its frame is written.
            atomicMemoryFence(ordering: .sequentiallyConsistent)
            if laneClosed.load(ordering: .sequentiallyConsistent) {
                // Unless the exit scan took it first: then it waits for the
                // next worker like any request this one never began.
                withdrawn = slots.unpublish(id)
                sent = !withdrawn
                return
            }
            RequestFrame.write(id: id, handler: UInt32(handler), LaneRequestContent(request, urlCount: line.count), into: &bytes)
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

    private func makeLane(owner: any WorkerLaneOwner) -> WorkerSlots {
        let made = WorkerSlots(owner: owner)
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
        let parameters = answerParameters.parameters
        let written: Void? = slots.take(id) { request, _ in
            let base = payload.baseAddress!.assumingMemoryBound(to: UInt8.self)
            request.callbacks.withUnsafeBufferPointer { callbacks in
                let callback = request.callback(for: answer, in: callbacks)
                parameters.withUnsafeBufferPointer { parameters in
                    request.sink!.emit(answered: answer) { output in
                        ReplyCapture.appendRecord(answer, callback: callback, parameters: parameters, in: base, to: &output)
                    }
                }
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
            slots.owner.adopt(&request, started: slots.started(id), plugin: ready.info.name)
        }
    }

    /// Every request in the lane sent before `cutoff`, now on the general
    /// path, with its id, handler and whether its handler returned.
    fileprivate func adoptAll(startedBefore cutoff: UInt64)
        -> [(id: UInt64, (handler: Int, returned: Bool, request: AdoptedRequest))] {
        guard let slots = lane.load() else { return [] }
        return slots.takeAll(startedBefore: cutoff) { request, returned in
            (request.id, (request.handler, returned,
                          slots.owner.adopt(&request, started: slots.started(request.id), plugin: ready.info.name)))
        }
    }

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
                state.calls[id] = InFlight(handler: entry.handler, request: entry.request.fields,
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
    // @unchecked: only the worker's reply thread touches it.
    var parameters: [ByteParameter] = []
}

extension WorkerSlots.Request {
    /// The decoded callback for an answer of `kind`, if the line named one
    /// that is not empty.
    func callback(for kind: OutcomeKind, in bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        let (start, count): (Int, Int)
        switch kind {
        case .success: (start, count) = (0, successCount)
        case .error: (start, count) = (max(successCount, 0), errorCount)
        case .cancel: (start, count) = (max(successCount, 0) + max(errorCount, 0), cancelCount)
        }
        return count > 0 ? UnsafeBufferPointer(rebasing: bytes[start..<start + count]) : nil
    }
}

/// Only the worker's reader thread (after the handshake) touches it.
private final class UncheckedFrameReader: @unchecked Sendable {
    let reader: FrameReader
    /// See `WorkerProcess.noteAnswered`.
    var highestAnswered: UInt64 = 0
    init(_ reader: FrameReader) { self.reader = reader }
}
