import CHostSupport
import Logging
import Synchronization
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

/// The worker process: `xcallback __worker FILE`, started by the host with
/// a socketpair on file descriptor 3. It loads one plug-in, reports its
/// routes, and runs its handlers for requests from the host.
public enum WorkerMain {
    /// The hidden subcommand the host starts workers with.
    public static let subcommand = "__worker"
    /// The worker's end of the socketpair.
    static let socketDescriptor: Int32 = 3
    /// The plug-in file, opened and checked by the host.
    static let libraryDescriptor: Int32 = 4
    /// The socket the worker hands its seccomp filter's listener to the host
    /// on, then closes (only when sandboxed).
    static let supervisorDescriptor: Int32 = 6
    /// The flag the host adds when the operator passed `--allow-insecure-plugins`
    /// (it relaxes the checks of a manifest's library, which the worker opens).
    public static let allowInsecureFlag = "--allow-insecure-plugins"
    /// The option the host passes the worker's `SandboxPlan` in.
    public static let sandboxOption = "--sandbox"

    /// The arguments after `__worker`, as the host writes them: `FILE
    /// --parent PID --host PID [--allow-insecure-plugins] [--sandbox PLAN]`.
    public struct Arguments {
        public var file: String
        public var parent: pid_t
        /// The host, when it is not the parent (the zygote is).
        public var host: pid_t
        public var allowInsecure = false
        public var sandbox: SandboxPlan?

        public init?(_ arguments: [String]) {
            guard let file = arguments.first else { return nil }
            self.file = file
            var parent: pid_t?
            var host: pid_t?
            var rest = arguments.dropFirst()
            while let argument = rest.popFirst() {
                switch argument {
                case "--parent": parent = rest.popFirst().flatMap { pid_t($0) }
                case "--host": host = rest.popFirst().flatMap { pid_t($0) }
                case allowInsecureFlag: allowInsecure = true
                case sandboxOption:
                    guard let plan = rest.popFirst().flatMap(SandboxPlan.init(encoded:)) else { return nil }
                    sandbox = plan
                default: return nil
                }
            }
            guard let parent else { return nil }
            self.parent = parent
            self.host = host ?? parent
        }
    }

    /// `parent` is the process that started it (the host, or the zygote),
    /// `host` the host: the sandbox protects both.
    public static func run(pluginPath: String, parent: pid_t, host: pid_t, allowInsecure: Bool, sandbox: SandboxPlan?,
                           logger: Logger) -> Int32 {
        // Die with the host, even one killed with SIGKILL; and if it died
        // before this line ran, leave now.
        _ = xcallback_set_parent_death_signal(SIGKILL)
        if getppid() != parent { return 1 }
        // Its stdout and stderr are pipes the host relays to its log
        // (`WorkerOutputRelay`): nothing a plug-in prints reaches a record.
        signal(SIGPIPE, SIG_IGN)
        // A stop signal sent to the whole group (Ctrl-C, systemd) is the
        // host's to act on: it shuts its workers down in order, running each
        // plug-in's shutdown hook, instead of seeing them die as crashes.
        _ = xcallback_defer_stop_signals_to_host()

        let socket = socketDescriptor
        let reader = FrameReader(descriptor: socket)
        // Mapped before anything else, then the descriptor is closed: the
        // plug-in has no business with it. Without the page (it could not
        // be made), answers batch in private memory as before.
        let progress = WorkerProgress.inherited()
        close(WorkerProgress.workerDescriptor)
        // The sandbox goes up before the plug-in's code first runs: dlopen
        // runs its constructors, so one entered after loading would come too
        // late for a plug-in that does its harm there. It must also come
        // before any thread starts, for Landlock binds only the thread that
        // enters it and the ones that thread starts afterwards.
        var sandboxError: SandboxError?
        if let sandbox {
            do {
                // Without the channel (the host could not make it), the kernel answers alone.
                let supervisor = fcntl(supervisorDescriptor, F_GETFD) >= 0 ? supervisorDescriptor : -1
                let layers = try WorkerSandbox.enter(sandbox, report: progress?.sandboxReport, host: host,
                                                     loadedFrom: loadedFiles(pluginPath, checking: FileSecurity(allowInsecure: allowInsecure)),
                                                     supervisor: supervisor,
                                                     library: FileSecurity.realPath(of: libraryDescriptor).map { (libraryDescriptor, $0) })
                logger.debug("worker \(getpid()): sandbox \(layers.joined(separator: ", ")); \(sandbox.capabilities.summary)")
            } catch {
                sandboxError = error
            }
            close(supervisorDescriptor)
        }
        // A forked worker holds the zygote's file-view template until here
        // (building its view from it lets it go): never the plug-in's.
        FileViewTemplate.release()
        let writer: any FrameOutput & Sendable = progress.map { WorkerOutbox(page: $0, descriptor: socket) { _exit(0) } }
            ?? BufferedWriter(descriptor: socket) { _exit(0) }
        let send: @Sendable (WorkerFrame) -> Void = { frame in writer.append { frame.encode(into: &$0) } }

        guard case .frame(.hello(let version, let taken)) = reader.next(beforeBlocking: {}) else { return 2 }
        guard version == WorkerFrame.protocolVersion else {
            send(.loadFailed(message: "worker speaks protocol \(WorkerFrame.protocolVersion), host \(version)"))
            writer.flush()
            return 2
        }
        if let sandboxError {
            send(.loadFailed(message: "\(PrintableText.escaping(pluginPath)): cannot enter the sandbox: \(sandboxError)"))
            writer.flush()
            return 0
        }
        let plugin: LoadedPlugin
        do {
            // The very file the host checked, not whatever the path names now.
            // Routes other plug-ins own: registering one fails with
            // XCALLBACK_ERR_ROUTE_CONFLICT here, as it would in process.
            let owners = RouteOwners(taken)
            plugin = try PluginLoader(logger: logger, security: FileSecurity(allowInsecure: allowInsecure))
                .load(pluginPath, from: libraryDescriptor) { owners.owner(ofSameShapeAs: $0) }
        } catch {
            send(.loadFailed(message: error.description))
            writer.flush()
            return 0
        }
        if let sandbox {
            do {
                try WorkerSandbox.enterScratch(sandbox)
            } catch {
                send(.loadFailed(message: "\(PrintableText.escaping(pluginPath)): \(error)"))
                writer.flush()
                return 0
            }
        }
        let info = plugin.info
        let signatures = zip(plugin.routes, plugin.signatures).compactMap { route, signature in
            signature.map { QueryParameter(name: route.text, value: $0.description) }
        }
        send(.ready(version: WorkerFrame.protocolVersion,
                    info: .init(name: info.name, version: info.version, summary: info.summary,
                                abiMajor: UInt16(info.abiMajor), abiMinor: UInt16(info.abiMinor)),
                    routes: plugin.routes.map(\.text), signatures: signatures,
                    refused: plugin.refusedRoutes.map { QueryParameter(name: $0.pattern, value: $0.owner) }))
        writer.flush()

        let endpoint = InProcessEndpoint(plugin: plugin)
        let lane = WorkerLane(endpoint: endpoint)
        let watchdog = StallWatchdog()
        watchdog.start()
        // A request for a native handler goes from the frame's bytes into
        // the lane's request (`WorkerLane.claim`); the rest is decoded.
        let claim: FrameReader.Intercept = { kind, payload in
            kind == WorkerFrame.requestKind && lane.claim(payload) ? .handedOver : .decode
        }
        let loop = HandoffLoop<WorkerInput>(
            read: {
                switch reader.next(beforeBlocking: BatchingThread.flushDeferred, intercept: claim) {
                case .frame(let frame): return .frame(frame)
                case .intercepted: return .claimedByLane
                case .end, .malformed: return nil
                }
            },
            process: { input in
                guard case .frame(let frame) = input else {
                    progress?.begin(lane.claimedID)
                    lane.runClaimed(send: send, output: writer)
                    return
                }
                switch frame {
                case .request(let id, let handler, let fields):
                    progress?.begin(id)
                    if !lane.run(id: id, handler: Int(handler), fields: fields, send: send, output: writer) {
                        run(id: id, handler: Int(handler), fields: fields, on: endpoint, send: send)
                    }
                case .sync:
                    // The handshake's end (`WorkerFrame.sync`): written
                    // after `ready`, which went out before this loop began.
                    send(.sync)
                    writer.flush()
                case .shutdown:
                    plugin.shutdown()
                    writer.flush()
                    _exit(0)
                default:
                    logger.error("worker: unexpected frame from the host; ignored")
                }
            },
            watchdog: watchdog,
            // What the stalled thread answered before its slow request,
            // and what the slow request answered before it stalled.
            onHandOff: {
                lane.promoteRunning(send: send, output: writer)
                writer.flush()
            })
        loop.start()
        loop.waitUntilInputEnds()
        // The host went away (or closed the socket): nothing left to answer.
        _exit(0)
    }

    /// What the worker's input loop reads: a decoded frame, or a request the
    /// lane took as it was.
    enum WorkerInput {
        case frame(WorkerFrame)
        case claimedByLane
    }

    /// Files the plug-in is loaded from beyond the one its path names (the
    /// sandbox lets their folders be read): the file it really is (its path
    /// may be a symlink), and for a binding manifest, its library, which is
    /// opened and checked now, before the sandbox (`checking`; see
    /// `PluginFile.openBeforeSandbox`).
    static func loadedFiles(_ pluginPath: String, descriptor: Int32 = libraryDescriptor,
                            checking security: FileSecurity? = nil) -> [String] {
        var files: [String] = []
        if let real = FileSecurity.realPath(of: descriptor) { files.append(real) }
        if pluginPath.hasSuffix(BindingManifest.suffix),
           let text = try? PluginFile.inherited(descriptor, path: pluginPath)
               .readText(limit: PluginLoader.maxManifestBytes, refuse: { .badManifest($0) }),
           let manifest = try? BindingManifest(parsing: text), manifest.library.contains("/") {
            let library = PluginLoader.resolve(manifest.library, besides: pluginPath)
            if let security { PluginFile.openBeforeSandbox(library, security: security) }
            files.append(library)
            var resolved = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            if realpath(library, &resolved) != nil {
                files.append(String(decoding: resolved.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return files
    }

    private static func run(id: UInt64, handler: Int, fields: RequestFields, on endpoint: InProcessEndpoint,
                            send: @escaping @Sendable (WorkerFrame) -> Void) {
        guard handler >= 0, handler < endpoint.plugin.registrations.count else {
            send(.result(id: id, result: .outcome(HostError.notFound("the worker has no handler \(handler)"))))
            return
        }
        let flag = DeliveredFlag()
        let call = HandlerCall { result in
            flag.value.store(true, ordering: .releasing)
            send(.result(id: id, result: result))
        }
        endpoint.invoke(handler: handler, request: fields, call: call)
        if !flag.value.load(ordering: .acquiring) {
            send(.returned(id: id))
        }
    }
}

private final class DeliveredFlag: Sendable {
    let value = Atomic<Bool>(false)
}
