import Logging
import XCallbackRouting
import Synchronization
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The xcallback host: loads plug-ins, reads request lines from stdin, a
/// FIFO or a Unix socket, and writes one outcome record per line.
public final class Host: Sendable {
    public let configuration: HostConfiguration
    let logger: Logger
    let registry = PluginRegistry()
    let dispatcher: Dispatcher
    let watchdog = StallWatchdog()
    let opener: CallbackOpener?
    let stopSignal = StopSignal()
    let spawner = WorkerSpawner()

    public init(configuration: HostConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.dispatcher = Dispatcher(
            registry: registry, limits: configuration.limits, timeout: configuration.timeout,
            keepsInput: configuration.output == .jsonl, logger: logger)
        self.opener = configuration.openCommand.map { CallbackOpener(command: $0, logger: logger) }
    }

    /// Every plug-in file found, loaded or refused.
    public var plugins: [PluginStatus] { registry.statuses }

    /// Scans the plug-in directories and loads what is new. Throws when a
    /// directory named explicitly cannot be used.
    public func loadPlugins(requireDirectories: Bool) throws(HostSetupError) {
        let discovery = PluginDiscovery(
            directories: configuration.pluginDirectories,
            security: FileSecurity(allowInsecure: configuration.allowInsecurePlugins))
        let scan = discovery.scan()
        if requireDirectories, let problem = scan.unreadableDirectories.first {
            throw HostSetupError("unusable plug-in directory: \(problem)")
        }
        for problem in scan.unreadableDirectories {
            logger.debug("skipping plug-in directory \(problem)")
        }
        for refusal in scan.refused {
            logger.error("\(refusal.description)")
            registry.refuse(refusal)
        }
        let known = Set(registry.statuses.map(\.path))
        for path in scan.candidates where !known.contains(path) {
            load(path)
        }
    }

    private func load(_ path: String) {
        switch configuration.isolation {
        case .none: loadInProcess(path)
        case .process: loadInWorker(path)
        }
    }

    private func loadInProcess(_ path: String) {
        do {
            let plugin = try PluginLoader(logger: logger).load(path) { [registry] pattern in
                registry.owner(ofSameShapeAs: pattern)
            }
            guard admit(plugin.info) else { return }
            registry.add(InProcessEndpoint(plugin: plugin), info: plugin.info,
                         routes: plugin.routes.enumerated().map { ($1, $0) })
            logger.info("loaded plug-in '\(plugin.name)' \(plugin.info.version) from \(path) with \(plugin.routes.count) route(s)")
        } catch {
            logger.error("\(error.description)")
            registry.refuse(error)
        }
    }

    /// Loads the plug-in in a worker process; the worker reports its routes.
    /// Routes another plug-in already owns are left out (the existing owner
    /// keeps them), as in-process registration would refuse them.
    private func loadInWorker(_ path: String) {
        let executable = configuration.workerExecutable
        let started = spawner.run { () -> Result<WorkerProcess, WorkerProcess.StartError> in
            Result { () throws(WorkerProcess.StartError) in
                try WorkerProcess.start(executable: executable, pluginPath: path)
            }
        }
        let worker: WorkerProcess
        switch started {
        case .success(let started):
            worker = started
        case .failure(let error):
            let message = error.message.hasPrefix(path) ? String(error.message.dropFirst(path.count + 2)) : error.message
            let refusal = PluginLoadError(path: path, reason: .other(message))
            logger.error("\(refusal.description)")
            registry.refuse(refusal)
            return
        }
        let info = worker.ready.info
        guard admit(info) else {
            worker.shutdown()
            return
        }
        var routes: [(pattern: RoutePattern, handler: Int)] = []
        for (index, text) in worker.ready.routes.enumerated() {
            guard let pattern = try? RoutePattern(text) else { continue }
            if let owner = registry.owner(ofSameShapeAs: pattern) {
                logger.error("plug-in '\(info.name)': refused route \(pattern): plug-in '\(owner)' already owns a route of the same shape")
                continue
            }
            routes.append((pattern, index))
        }
        let endpoint = WorkerEndpoint(first: worker, executable: configuration.workerExecutable, spawner: spawner,
                                      policy: configuration.restartPolicy, logger: logger)
        registry.add(endpoint, info: info, routes: routes)
        logger.info("loaded plug-in '\(info.name)' \(info.version) from \(path) in worker \(worker.pid) with \(routes.count) route(s)")
    }

    /// Refuses a second plug-in with a name already loaded.
    private func admit(_ info: PluginInfo) -> Bool {
        guard let other = registry.path(ofPluginNamed: info.name) else { return true }
        let error = PluginLoadError(path: info.path, reason: .duplicateName(other))
        logger.error("\(error.description)")
        registry.refuse(error, info: info)
        return false
    }

    // MARK: serving

    /// Reads requests from `input` until end of input, then waits for every
    /// outcome and returns. Records go to `output`.
    public func serve(input: Int32, output: Int32) {
        startBackgroundWork()
        let sink = makeSink(output)
        let loop = runLoop(input: input, sink: sink)
        drain(loop)
        finishBackgroundWork()
    }

    /// Reads requests from the FIFO at `path` until SIGINT/SIGTERM, across
    /// any number of writers opening and closing it.
    public func serveFIFO(path: String, output: Int32) throws(HostSetupError) {
        let fifo = try FIFOInput.open(path)
        startBackgroundWork()
        let sink = makeSink(output)
        let loop = runLoop(input: fifo.readDescriptor, sink: sink)
        drain(loop)
        finishBackgroundWork()
    }

    /// Serves a Unix stream socket: each connection sends lines and reads
    /// its own records, until SIGINT/SIGTERM.
    public func serveSocket(path: String) throws(HostSetupError) {
        let listener = try SocketListener(path: path)
        startBackgroundWork()
        listener.acceptConnections(until: stopSignal) { [self] connection in
            let sink = OutputSink(descriptor: connection, format: configuration.output,
                                  keepOrder: configuration.keepOrder, opener: nil, onClosed: {})
            let loop = runLoop(input: connection, sink: sink)
            drain(loop)
            close(connection)
        }
        finishBackgroundWork()
    }

    /// Stops reading input; in-flight requests get the grace period.
    public func requestStop() {
        stopSignal.raise()
    }

    /// Loads plug-in files that appeared since the last scan, and gives
    /// disabled plug-ins a fresh worker (SIGHUP).
    public func rescan() {
        logger.info("rescanning plug-in directories")
        for case let endpoint as WorkerEndpoint in registry.endpoints { endpoint.reload() }
        try? loadPlugins(requireDirectories: false)
    }

    // MARK: pieces

    private func makeSink(_ output: Int32) -> OutputSink {
        OutputSink(descriptor: output, format: configuration.output, keepOrder: configuration.keepOrder,
                   opener: opener, onClosed: { [self] in
                       // A closed stdout ends the host quietly (SPEC section 3).
                       requestStop()
                   })
    }

    private func runLoop(input: Int32, sink: OutputSink) -> InputLoop {
        let reader = LineReader(descriptor: input, wake: stopSignal.descriptor,
                                maxLineBytes: configuration.limits.maxLineBytes)
        let loop = InputLoop(reader: reader, dispatcher: dispatcher, sink: sink, watchdog: watchdog)
        loop.start()
        loop.waitUntilInputEnds()
        return loop
    }

    /// Waits for every record the loop owes; after a stop request, only for
    /// the grace period, then answers `Timeout` for what is left.
    private func drain(_ loop: InputLoop) {
        let owed = loop.lineCount
        if stopSignal.isRaised {
            let grace = configuration.gracePeriod.components
            let deadline = MonotonicClock.now + UInt64(grace.seconds) * 1_000_000_000
                + UInt64(grace.attoseconds / 1_000_000_000)
            if !loop.sink.waitForEmitted(owed, deadline: deadline) {
                dispatcher.expireAll()
            }
        }
        _ = loop.sink.waitForEmitted(owed, deadline: nil)
        loop.sink.flush()
    }

    private func startBackgroundWork() {
        watchdog.start()
    }

    private func finishBackgroundWork() {
        opener?.drain()
        watchdog.stop()
        dispatcher.stop()
        stopWorkers()
    }

    /// Asks every worker to run its plug-in's shutdown hook and exit, and
    /// waits for them (bounded): no worker outlives the host.
    func stopWorkers() {
        let workers = registry.endpoints.compactMap { $0 as? WorkerEndpoint }
        for worker in workers { worker.shutdown() }
        let deadline = MonotonicClock.now + 2_000_000_000
        for worker in workers {
            worker.waitForExit(until: deadline)
        }
    }
}

/// A pipe that becomes readable once the host is asked to stop, so every
/// thread blocked in poll() wakes up.
final class StopSignal: Sendable {
    private let pipeEnds: (read: Int32, write: Int32)
    private let raised = Atomic<Bool>(false)

    init() {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0, "pipe failed")
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        pipeEnds = (ends[0], ends[1])
    }

    var descriptor: Int32 { pipeEnds.read }
    var isRaised: Bool { raised.load(ordering: .acquiring) }

    func raise() {
        guard !raised.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(pipeEnds.write, &byte, 1)
    }
}
