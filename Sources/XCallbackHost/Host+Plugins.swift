import CHostSupport
import Logging
import Synchronization
import XCallbackBridge
import XCallbackRouting
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The plug-ins' lifecycle: scan, load (in process or as a worker), replace,
// retire, and stop.
extension Host {
    /// The checks a plug-in file passes before any of its code runs.
    private var security: FileSecurity { FileSecurity(allowInsecure: configuration.allowInsecurePlugins) }

    /// A plug-in ready to be registered, not yet reachable.
    private struct Prepared {
        var endpoint: any PluginEndpoint
        var info: PluginInfo
        var routes: [(pattern: RoutePattern, handler: Int)]
    }

    /// Scans the plug-in directories and loads what is new. Throws when a
    /// directory named explicitly cannot be used.
    public func loadPlugins(requireDirectories: Bool) throws(HostSetupError) {
        // The zygote starts (it execs and warms up, some 15 ms) while the
        // folders are scanned, not once the first worker is wanted.
        if configuration.isolation == .process {
            let (spawner, executable) = (spawner, configuration.workerExecutable)
            spawner.schedule(after: .zero) { _ = spawner.zygote(for: executable) }
        }
        let scan = discovery.scan()
        if requireDirectories, let problem = scan.unreadableDirectories.first {
            throw HostSetupError("unusable plug-in directory: \(problem)")
        }
        // A default folder that does not exist is simply not used; one that
        // exists and cannot be used is a problem to fix, and is said so.
        for problem in scan.unreadableDirectories {
            if scan.missingDirectories.contains(where: { problem.hasPrefix($0 + ": ") }) {
                logger.debug("skipping plug-in directory \(problem)")
            } else {
                logger.warning("skipping plug-in directory \(problem)")
            }
        }
        reconcile(scan, probeFirst: false)
        if !registry.statuses.contains(where: \.isLoaded) {
            let searched = configuration.pluginDirectories.map(PrintableText.escaping).joined(separator: ", ")
            logger.warning("no plug-in loaded; searched \(searched) (--plugins DIR or XCALLBACK_PLUGIN_PATH name others)")
        }
    }

    /// Brings the loaded plug-ins in line with the plug-in directories:
    /// new files load, changed files replace their plug-in, removed files'
    /// routes go away. A file whose stamp is unchanged is not looked at
    /// again, so a broken file is reported once, until it changes.
    func reconcile(_ scan: PluginDiscovery.Scan, probeFirst: Bool) {
        registry.skippedDirectories = scan.unreadableDirectories.filter { problem in
            !scan.missingDirectories.contains { problem.hasPrefix($0 + ": ") }
        }
        var present = Set<String>()
        for refusal in scan.refused {
            present.insert(refusal.path)
            guard note(refusal.path) else { continue }
            logger.error("\(refusal.description)")
            if let old = registry.remove(path: refusal.path) { retire(old) }
            registry.refuse(refusal)
        }
        var changed: [(path: String, replacing: Bool)] = []
        for path in scan.candidates {
            present.insert(path)
            guard note(path) else { continue }
            changed.append((path, registry.statuses.contains { $0.path == path && $0.isLoaded }))
        }
        // New plug-ins' workers load side by side; each is then taken in
        // this order, as if they had started one after another.
        let launched = launchWorkers(for: changed.filter { !$0.replacing }.map(\.path))
        for (path, replacing) in changed {
            guard let prepared = prepare(path, replacing: replacing, probeFirst: probeFirst, launched: launched[path])
            else { continue }
            if replacing {
                let old = registry.replace(path: path, with: prepared.endpoint, info: prepared.info, routes: prepared.routes)
                if let old { retire(old, successor: prepared.endpoint) }
                logger.notice("reloaded plug-in '\(PrintableText.escaping(prepared.info.name))' from \(PrintableText.escaping(path))")
            } else {
                registry.add(prepared.endpoint, info: prepared.info, routes: prepared.routes)
            }
            _ = metrics?.plugin(named: prepared.info.name)
        }
        let gone = stamps.withLock { stamps -> [String] in
            let gone = stamps.keys.filter { !present.contains($0) }
            gone.forEach { stamps.removeValue(forKey: $0) }
            return gone
        }
        for path in gone {
            if let old = registry.remove(path: path) {
                logger.notice("plug-in file \(PrintableText.escaping(path)) was removed; its routes are gone")
                retire(old)
            } else {
                registry.remove(path: path)
            }
        }
    }

    /// Records the file's current stamp; true when it is new or changed.
    private func note(_ path: String) -> Bool {
        guard let stamp = FileStamp(path: path) else { return false }
        return stamps.withLock { stamps in
            guard stamps[path] != stamp else { return false }
            stamps[path] = stamp
            return true
        }
    }

    /// Retires a replaced or removed plug-in's worker endpoint; what still
    /// reaches it goes to `successor`, the file's new version, if any.
    private func retire(_ endpoint: any PluginEndpoint, successor: (any PluginEndpoint)? = nil) {
        (endpoint as? WorkerEndpoint)?.retire(successor: successor as? WorkerEndpoint)
    }

    private func prepare(_ path: String, replacing: Bool, probeFirst: Bool,
                         launched: Result<WorkerLauncher.Launch, WorkerLauncher.StartError>?) -> Prepared? {
        switch configuration.isolation {
        case .none: return prepareInProcess(path, replacing: replacing, probeFirst: probeFirst)
        case .process: return prepareWorker(path, replacing: replacing, launched: launched)
        }
    }

    /// Starts a worker for each of `paths` (with workers, and more than
    /// one), without waiting for any: a hundred plug-ins then load side by
    /// side instead of one after another. Each is told the routes owned
    /// before this batch; `prepareWorker` starts one again if a plug-in of
    /// the same batch took a route from under it.
    private func launchWorkers(for paths: [String]) -> [String: Result<WorkerLauncher.Launch, WorkerLauncher.StartError>] {
        guard configuration.isolation == .process, paths.count > 1 else { return [:] }
        let (executable, security, sandboxing) = (configuration.workerExecutable, security, sandboxing)
        let jobs = paths.map { (path: $0, taken: registry.takenRoutes(excluding: $0)) }
        let launched = spawner.run { [spawner] () -> [Result<WorkerLauncher.Launch, WorkerLauncher.StartError>] in
            // The zygote forks the batch while each worker is prepared.
            let zygote = spawner.zygote(for: executable)
            zygote?.prefork(count: jobs.count)
            defer { zygote?.dropPreforked() }
            return jobs.map { job in
                Result { () throws(WorkerLauncher.StartError) in
                    try WorkerLauncher.launch(executable: executable, pluginPath: job.path, security: security,
                                             sandboxing: sandboxing, taken: job.taken, zygote: spawner.zygote(for: executable),
                                             output: spawner.output)
                }
            }
        }
        return Dictionary(zip(paths, launched), uniquingKeysWith: { first, _ in first })
    }

    private func prepareInProcess(_ path: String, replacing: Bool, probeFirst: Bool) -> Prepared? {
        if probeFirst {
            // A file dropped into a running host may crash in its
            // constructor: try it in a worker before it can take the host.
            // Unsandboxed, as it will run here.
            let probe = PluginProbe(executable: configuration.workerExecutable, spawner: spawner)
                .probe(path, security: security, sandboxing: WorkerSandboxing(mode: .off, kernel: sandboxing.kernel),
                       taken: registry.takenRoutes(excluding: path))
            if let error = probe.error {
                logger.error("\(error.description)")
                registry.refuse(error)
                return nil
            }
        }
        // A module of an installed format (`.wasm`) reaches nothing but its
        // own memory and the host's functions in any process: its memory
        // ceiling applies here too, and nothing else it could declare.
        if PluginFormats.format(for: path) == nil,
           (try? WorkerSandboxing.declared(forPluginAt: path, security: security)) != nil {
            logger.warning("\(PrintableText.escaping(path)) declares capabilities (\(PrintableText.escaping(CapabilityDeclaration.sidecarPath(for: path)))), but --isolation none runs it inside the host, where no sandbox applies: it has all of the host's authority")
        }
        do {
            let plugin = try PluginLoader(logger: logger, security: security).load(path) { [registry] pattern in
                registry.owner(ofSameShapeAs: pattern, excluding: path)
            }
            guard admit(plugin.info) else { return nil }
            logger.info("loaded plug-in '\(PrintableText.escaping(plugin.name))' \(PrintableText.escaping(plugin.info.version)) from \(PrintableText.escaping(path)) with \(plugin.routes.count) route(s)")
            let endpoint = InProcessEndpoint(plugin: plugin, counts: metrics?.plugin(named: plugin.name))
            return Prepared(endpoint: endpoint, info: plugin.info,
                            routes: plugin.routes.enumerated().map { ($1, $0) })
        } catch {
            logger.error("\(error.description)")
            if !replacing { registry.refuse(error) }
            return nil
        }
    }

    /// Loads the plug-in in a worker process; the worker reports its routes.
    /// Routes another plug-in already owns are left out (the existing owner
    /// keeps them), as in-process registration would refuse them. A broken
    /// replacement leaves the running version in place.
    private func prepareWorker(_ path: String, replacing: Bool,
                               launched: Result<WorkerLauncher.Launch, WorkerLauncher.StartError>? = nil) -> Prepared? {
        let (executable, security, sandboxing) = (configuration.workerExecutable, security, sandboxing)
        let startNow = { [registry, spawner] () -> Result<WorkerProcess, WorkerLauncher.StartError> in
            let taken = registry.takenRoutes(excluding: path)
            return spawner.run { () -> Result<WorkerProcess, WorkerLauncher.StartError> in
                Result { () throws(WorkerLauncher.StartError) in
                    try WorkerLauncher.start(executable: executable, pluginPath: path, security: security,
                                            sandboxing: sandboxing, taken: taken, zygote: spawner.zygote(for: executable),
                                             output: spawner.output)
                }
            }
        }
        var started: Result<WorkerProcess, WorkerLauncher.StartError>
        if let launched {
            started = launched.flatMap { launch in Result { () throws(WorkerLauncher.StartError) in try launch.ready() } }
            // Launched before this batch's earlier plug-ins had their routes: if
            // one of them now owns a route this one registered, this one would
            // have been refused it, so it starts again, told.
            if case .success(let worker) = started, case .success(let launch) = launched,
               registry.takenRoutes(excluding: path) != launch.taken,
               worker.ready.routes.contains(where: { text in
                   (try? RoutePattern(text)).flatMap { registry.owner(ofSameShapeAs: $0, excluding: path) } != nil
               }) {
                worker.discard()
                started = startNow()
            }
        } else {
            started = startNow()
        }
        let worker: WorkerProcess
        switch started {
        case .success(let started):
            worker = started
        case .failure(let error):
            let message = error.message.hasPrefix(path) ? String(error.message.dropFirst(path.count + 2)) : error.message
            let refusal = PluginLoadError(path: path, reason: .other(message))
            logger.error("\(refusal.description)\(replacing ? "; the running version stays" : "")")
            if !replacing { registry.refuse(refusal) }
            return nil
        }
        let info = worker.ready.info
        guard admit(info) else {
            worker.discard()
            return nil
        }
        var routes: [(pattern: RoutePattern, handler: Int)] = []
        for (index, text) in worker.ready.routes.enumerated() {
            guard let pattern = try? RoutePattern(text) else { continue }
            if let owner = registry.owner(ofSameShapeAs: pattern, excluding: path) {
                logger.error("plug-in '\(info.name)': refused route \(pattern): plug-in '\(owner)' already owns a route of the same shape")
                continue
            }
            routes.append((pattern, index))
        }
        let endpoint = WorkerEndpoint(first: worker, executable: executable, security: security, sandboxing: sandboxing,
                                      takenRoutes: { [registry] in registry.takenRoutes(excluding: path) }, spawner: spawner,
                                      policy: configuration.restartPolicy, logger: logger,
                                      hostStopping: { [stopSignal] in stopSignal.isRaised },
                                      metrics: metrics?.plugin(named: info.name))
        logger.info("loaded plug-in '\(PrintableText.escaping(info.name))' \(PrintableText.escaping(info.version)) from \(PrintableText.escaping(path)) in worker \(worker.pid) with \(routes.count) route(s)")
        return Prepared(endpoint: endpoint, info: info, routes: routes)
    }

    /// Refuses a second plug-in with a name already loaded from another file.
    private func admit(_ info: PluginInfo) -> Bool {
        guard let other = registry.path(ofPluginNamed: info.name), other != info.path else { return true }
        let error = PluginLoadError(path: info.path, reason: .duplicateName(other))
        logger.error("\(error.description)")
        registry.refuse(error, info: info)
        return false
    }

    /// A full rescan (SIGHUP): gives disabled plug-ins a fresh worker and
    /// loads, replaces or drops plug-ins whose files changed.
    public func rescan() {
        logger.info("rescanning plug-in directories")
        for case let endpoint as WorkerEndpoint in registry.endpoints { endpoint.reload() }
        reconcileChangedFiles()
    }

    /// Loads, replaces or drops the plug-ins whose files changed since the
    /// last scan; one scan at a time (SIGHUP and the watcher may overlap).
    private func reconcileChangedFiles() {
        rescanLock.withLock { _ in reconcile(discovery.scan(), probeFirst: true) }
    }

    /// Watches the plug-in directories while a long-running input is
    /// served: changes take effect within the watcher's settle time. One
    /// catch-up scan first covers what changed between the start-up scan
    /// and the watches (only changed files are loaded again).
    func watchPlugins(with watcher: DirectoryWatcher) {
        reconcileChangedFiles()
        watcher.start { [self] in reconcileChangedFiles() }
    }

    /// Runs every plug-in's shutdown hook, bounded in all (`shutdownDeadline`):
    /// workers run it and exit (no worker outlives the host: one still
    /// running dies with it); in-process plug-ins run it on a thread of
    /// their own, so a hook that never returns cannot keep the host from
    /// exiting.
    func stopPlugins() {
        let endpoints = registry.endpoints
        let started = MonotonicClock.now
        let deadline = shutdownDeadline
        let workers = endpoints.compactMap { $0 as? WorkerEndpoint }
        for worker in workers { worker.shutdown() }
        let inProcess = endpoints.compactMap { $0 as? InProcessEndpoint }
        let unfinished = ConditionLock(inProcess.count)
        for endpoint in inProcess {
            Threads.detach {
                endpoint.plugin.shutdown()
                unfinished.withLock { $0 -= 1 }
                unfinished.broadcast()
            }
        }
        for worker in workers {
            worker.waitForExit(until: deadline)
        }
        // What they printed last reaches the log before the summary does.
        spawner.output.waitUntilRelayed(until: deadline)
        // Not before every worker that could write in a scratch folder has
        // ended, one still starting (a restart) or retired included: the
        // removal waits for them up to the deadline, then kills them.
        if let warning = sandboxing.removeScratchFolders(waitingUntil: deadline).warning {
            logger.warning("\(warning)")
        }
        let finished = unfinished.wait(until: { $0 == 0 }, deadline: deadline) { $0 == 0 }
        if !finished {
            let tenths = (Double(deadline &- started) / 1e8).rounded() / 10
            logger.warning("an in-process plug-in's shutdown hook did not return within \(tenths) s; exiting without it")
        }
    }

    /// When the plug-ins' shutdown hooks must be done: 2 s from now, but a
    /// stop by signal ends within its grace period plus 1 s, whatever a
    /// worker stuck in its handlers does (docs/usage.md, "Signals"); a hook
    /// gets at least a fifth of a second.
    private var shutdownDeadline: UInt64 {
        let now = MonotonicClock.now
        let usual = now + Self.shutdownHookBudget
        guard let raisedAt = stopSignal.raisedAt else { return usual }
        let bound = raisedAt + configuration.gracePeriod.nanoseconds + Self.stopEndMargin
        return min(usual, max(bound, now + Self.shortestHookBudget))
    }

    static let shutdownHookBudget: UInt64 = 2_000_000_000
    static let shortestHookBudget: UInt64 = 200_000_000
    /// Past the grace period, what the rest of a stop may take before the
    /// hooks must be done (the last records, the summary: well under the
    /// second the stop is promised).
    static let stopEndMargin: UInt64 = 800_000_000
}
