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
            writer?.started(pidfd: forked.pidfd)
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
                                 ready: WorkerProcess.Ready(info: pluginInfo, routes: routes))
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
        guard routes.count <= WorkerFrame.maxRoutes, routes.allSatisfy({ $0.utf8.count <= 4096 }) else {
            return "gave more than \(WorkerFrame.maxRoutes) routes, or one longer than 4 KiB"
        }
        return nil
    }
}
