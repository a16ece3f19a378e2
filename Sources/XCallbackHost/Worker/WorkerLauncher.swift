import CHostSupport
import Logging
import XCallbackBridge
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL
import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts a worker process: opens and checks the plug-in file, plans its
/// sandbox, gives it its socket, page, pipes and library descriptor, forks
/// it from the zygote or executes it, greets it, and waits for its
/// handshake. What a worker does once it is ready is `WorkerProcess`'s.
enum WorkerLauncher {
    /// Why starting a worker failed.
    struct StartError: Error, CustomStringConvertible {
        var message: String
        /// The refusal itself, when the file or its capabilities were
        /// refused before any worker ran (its reason intact).
        var refusal: PluginLoadError? = nil
        /// How the worker ended, when it ended (or was ended) before it was
        /// ready.
        var exit: WorkerExit? = nil
        /// It did not finish its handshake within the time limit.
        var timedOut = false
        /// The forbidden system call its sandbox ended it for, if that is
        /// how it ended.
        var violation: String? = nil
        var description: String { message }
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
        let pid: pid_t
        let socket: Int32
        let progress: WorkerProgress?
        let plan: SandboxPlan?
        let supervisor: SandboxSupervisor?
        let pluginPath: String
        let parent: WorkerParent
        /// Names its output in the host's log.
        let output: WorkerOutputRelay.Channel?
        /// The routes it was told other plug-ins own.
        let taken: [QueryParameter]

        /// Waits for the handshake (up to `handshakeTimeout` seconds).
        func ready(handshakeTimeout: Int32 = 10) throws(StartError) -> WorkerProcess {
            try WorkerLauncher.handshake(self, timeout: handshakeTimeout)
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
            throw StartError(message: error.description, refusal: error)
        }
        defer { file.close() }
        // Read again for every start, like the file: the declaration and
        // the grants in force now are the ones this worker gets.
        let plan: SandboxPlan?
        do {
            plan = try sandboxing.plan(forPluginAt: pluginPath, security: security)
        } catch {
            throw StartError(message: error.description, refusal: error)
        }
        // Counted from before it starts: the host removes the scratch
        // folder only once every worker that could write there has ended,
        // one still starting included. Released here unless it started.
        var writer: ScratchWriter? = nil
        if plan != nil {
            guard let admitted = sandboxing.admitScratchWriter() else {
                throw StartError(message: "\(pluginPath): the host is stopping; no worker starts")
            }
            writer = admitted
        }
        var handedOver = false
        defer { if !handedOver { writer?.ended() } }
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
        var parent = WorkerParent(forked: nil, writer: writer)
        if let zygote, case .success(let forked) = zygote.fork(arguments: workerArguments(zygote.pid),
                                                                 environment: ChildEnvironment.variables(for: plan),
                                                                 placements: placements + streams.placements) {
            pid = forked.pid
            parent = WorkerParent(forked: forked, writer: writer)
            forked.handPidfd(to: writer)
        } else {
            // No zygote, or it could not fork (it died, or a sanitizer's
            // thread made forking unsafe): the worker is executed, and its
            // parent is the host.
            switch HostChild.spawn(executable, arguments: [WorkerMain.subcommand] + workerArguments(getpid()),
                                   stdout: streams.stdout, stderr: streams.stderr, placing: placements, sandbox: plan) {
            case .success(let child):
                pid = child
                // The host's child, not reaped yet: this names it.
                let pidfd = xcallback_pidfd_open(child)
                writer?.started(pidfd: pidfd)
                if pidfd >= 0 { close(pidfd) }
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
        // From here, whoever reaps it (through `parent`) says it ended.
        handedOver = true
        // Answering the worker's filter starts now: its plug-in's
        // constructors run before the handshake ends.
        let supervisor = supervision[0] >= 0 ? SandboxSupervisor(channel: supervision[0], endGroup: { [parent, pid] in parent.signalGroup(pid, SIGKILL) }) : nil
        if let supervisor { Threads.detach { supervisor.serve() } }
        sendFrame(.hello(version: WorkerFrame.protocolVersion, taken: taken), to: host)
        return Launch(pid: pid, socket: host, progress: shared?.progress, plan: plan, supervisor: supervisor,
                      pluginPath: pluginPath, parent: parent, output: streams.channel, taken: taken)
    }

    private static func handshake(_ launch: Launch, timeout: Int32) throws(StartError) -> WorkerProcess {
        let reader = FrameReader(descriptor: launch.socket)
        let ready = try awaitReady(launch, reader: reader, timeout: timeout)
        return WorkerProcess(pid: launch.pid, socket: launch.socket, progress: launch.progress, sandbox: launch.plan,
                             supervisor: launch.supervisor, reader: reader, parent: launch.parent, ready: ready)
    }

    /// The handshake, the one way every worker is taken in (`run`'s, and
    /// `PluginProbe`'s for `check`, `plugins` and `routes`): its `ready`,
    /// checked, then the echo of the host's `sync` with nothing between,
    /// all within `timeout` seconds. On failure the worker is ended and
    /// reaped, and its socket closed.
    static func awaitReady(_ launch: Launch, reader: FrameReader, timeout: Int32) throws(StartError) -> WorkerProcess.Ready {
        let (pid, host, pluginPath) = (launch.pid, launch.socket, launch.pluginPath)
        // A bound on the whole handshake, not only on its first byte: a
        // constructor that writes part of a frame and hangs must not hold
        // the host (or `check`) in the read of the rest.
        let deadline = MonotonicClock.now + UInt64(max(timeout, 0)) * 1_000_000_000
        let next = { reader.next(beforeBlocking: { limitReads(host, until: deadline) }) }
        // Ends the worker (and anything its constructors started), reaps
        // it, and throws what `message` makes of how it ended; its exit is
        // kept only when it `endedAlone` (it crashed or exited), not when it
        // was ended here.
        let fail = { (timedOut: Bool, endedAlone: Bool, message: (WorkerExit) -> String) throws(StartError) -> Never in
            launch.parent.signalGroup(pid, SIGKILL)
            close(host)
            let exit = launch.parent.wait(for: pid)
            throw StartError(message: message(exit), exit: endedAlone ? exit : nil, timedOut: timedOut,
                             violation: endedAlone ? launch.supervisor?.violation : nil)
        }
        let timedOut = { (_: WorkerExit) in
            "\(pluginPath): the worker did not finish loading within \(timeout) s (a constructor or registration that never returns?)"
        }
        let ended = { (exit: WorkerExit) in
            if let call = launch.supervisor?.violation {
                return "\(pluginPath): the worker was ended by its sandbox for a forbidden system call (\(call)) before it was ready"
            }
            return "\(pluginPath): the worker \(exit) before it was ready"
        }
        switch next() {
        case .frame(.ready(let version, let info, let routes, let signatures, let refused)) where version == WorkerFrame.protocolVersion:
            // The worker's word for what it loaded: the plug-in's name shows
            // in every log line about it, so it must be a name (a forged one
            // with newlines wrote whole log lines of the host's).
            if let problem = readyProblem(info: info, routes: routes, pairs: signatures + refused) {
                try fail(false, false) { _ in "\(PrintableText.escaping(pluginPath)): the worker's handshake \(problem); not started" }
            }
            // Nothing but the echo may follow: the worker wrote its `ready`
            // before it could read this (`WorkerFrame.sync`).
            sendFrame(.sync, to: host)
            switch next() {
            case .frame(.sync): break
            case .end where MonotonicClock.now >= deadline: try fail(true, false, timedOut)
            case .end: try fail(false, true, ended)
            default:
                try fail(false, false) { _ in
                    "\(pluginPath): its worker's socket carried more than its handshake (its plug-in wrote on the socket while it loaded); not started"
                }
            }
            // Ready: from now on a read waits as long as the worker is quiet.
            limitReads(host, until: nil)
            launch.output?.rename(info.name)
            let pluginInfo = PluginInfo(path: pluginPath, name: info.name, version: info.version, summary: info.summary,
                                        abiMajor: Int(info.abiMajor), abiMinor: Int(info.abiMinor))
            return WorkerProcess.Ready(info: pluginInfo, routes: routes, signatures: signatures, refused: refused)
        case .frame(.loadFailed(let message)):
            // The worker's word, which its plug-in's constructors could have
            // written: one line, escaped, cut, as any output of a plug-in.
            try fail(false, false) { _ in PrintableText.escaping(String(message.prefix(4096))) }
        case .end where MonotonicClock.now >= deadline:
            try fail(true, false, timedOut)
        case .malformed:
            try fail(false, false) { _ in
                "\(pluginPath): the worker's handshake did not decode (its plug-in wrote on the socket while it loaded?); not started"
            }
        case .end:
            try fail(false, true, ended)
        case .frame, .intercepted:
            // Another kind, or a `ready` of another protocol.
            try fail(false, false) { _ in
                "\(pluginPath): the worker's handshake began with no ready frame of protocol \(WorkerFrame.protocolVersion); not started"
            }
        }
    }

    /// Bounds each read of the handshake by what is left until `deadline`
    /// (nil: reads block again, as a worker's reader thread wants them).
    static func limitReads(_ socket: Int32, until deadline: UInt64?) {
        var limit = timeval()
        if let deadline {
            let now = MonotonicClock.now
            // At least a microsecond: zero would mean no limit at all.
            let left = deadline > now ? deadline - now : 1_000
            limit.tv_sec = Int(left / 1_000_000_000)
            limit.tv_usec = max(Int(left % 1_000_000_000 / 1_000), limit.tv_sec == 0 ? 1 : 0)
        }
        _ = setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes one frame to a worker that may already be gone: an error,
    /// never SIGPIPE (`check` does not ignore it as the host does).
    static func sendFrame(_ frame: WorkerFrame, to socket: Int32) {
        var bytes: [UInt8] = []
        frame.encode(into: &bytes)
        _ = send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// What is wrong with what a worker said it loaded, if anything: a
    /// name as the loader checks it, and text of bounded size.
    private static func readyProblem(info: WorkerFrame.WireInfo, routes: [String], pairs: [QueryParameter]) -> String? {
        if let problem = PluginLoader.reportedIdentityProblem(name: info.name, version: info.version, summary: info.summary) {
            return problem
        }
        guard routes.count <= WorkerFrame.maxRoutes, routes.allSatisfy({ $0.utf8.count <= 4096 }) else {
            return "gave more than \(WorkerFrame.maxRoutes) routes, or one longer than 4 KiB"
        }
        // Signatures and refusals (route, declaration or owner) are shown
        // by `check` and `routes`: text of bounded size too.
        guard pairs.allSatisfy({ $0.name.utf8.count <= 4096 && $0.value.utf8.count <= 4096 }) else {
            return "gave a signature or a refused route longer than 4 KiB"
        }
        return nil
    }
}
