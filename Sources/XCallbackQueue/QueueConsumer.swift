#if Queue  // the package's Queue trait: swift build --traits Queue
import Foundation
import Logging
import PostgresNIO
import Synchronization
import XCallbackHost
import XCallbackSystem
import XCallbackURL

/// How a host consumes the queue (`xcallback run --queue`).
public struct QueueConsumerOptions: Sendable {
    /// Requests claimed in one statement.
    public var batchSize = 256
    /// Requests claimed and not yet recorded, at most.
    public var maxInFlight = 2_048
    /// Suspects (back from a host that died holding them) run beside other
    /// work, this many at most at once on one host, so a host's death costs
    /// the others no more than its suspects' own run time; one whose host
    /// dies again while it runs so runs alone from then on.
    public var suspectsBeside = 16
    /// How long a host's lease lasts without a heartbeat; it heartbeats
    /// three times per lease.
    public var lease: Duration = .seconds(15)
    /// The safety net under LISTEN/NOTIFY: an idle host looks this often.
    public var pollInterval: Duration = .seconds(1)
    /// How long outcomes are kept.
    public var retention: Duration = .seconds(7 * 86_400)
    /// How often a host prunes outcomes past the retention.
    public var pruneInterval: Duration = .seconds(60)
    /// At shutdown, how long to keep trying to record outcomes while the
    /// database cannot be reached; after that their leases run out and
    /// other hosts run them again.
    public var shutdownRecordingLimit: Duration = .seconds(30)
    /// At start, how long to keep trying (with back-off) a database that
    /// cannot be reached yet; zero gives up at the first failure.
    public var waitForDatabase: Duration = .zero

    public init() {}
}

/// Makes a `Host` consume the queue: claims batches under a lease, feeds
/// them to the host, and records each outcome and retires its request in
/// one transaction fenced by the claim's attempt. The host stays the
/// dispatcher; this is its input and its output.
public final class QueueConsumer: Sendable {
    public let location: QueueLocation
    let options: QueueConsumerOptions
    let host: XCallbackHost.Host
    let format: OutputFormat
    /// Where committed records are written (stdout); -1 for nowhere.
    let output: Int32
    let logger: Logger
    let store: QueueStore
    /// `hostname:pid`, in each outcome row and the hosts table.
    let name: String

    private let feed = ClaimedFeed()
    private let recorder: OutcomeBuffer
    /// Claimed requests not yet recorded, by id.
    private let inFlight = Mutex<[Int64: ClaimedRequest]>([:])
    /// This host's row in the hosts table (it changes if the lease was lost).
    private let hostID = Atomic<Int64>(0)
    private let stopping = Atomic<Bool>(false)
    /// Claimed requests that never started, to return to the queue on the way out.
    private let unstarted = Mutex<[ClaimedRequest]>([])
    /// Wakes the claim loop: a notification, the poll tick, room freed, a stop.
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let counters = Mutex(Counters())
    /// When a stop must be over: set once the host has answered what it
    /// started (its grace period included), to then plus
    /// `shutdownRecordingLimit`. Every retry loop still running then (the
    /// recording, returning what never started, leaving) gives up there.
    private let leaveBy = Mutex<ContinuousClock.Instant?>(nil)
    private let written = Mutex(RecentlyWritten())

    struct Counters {
        var recorded = 0
        var fenced = 0
        /// Outcomes given up on at a stop that could not reach the database.
        var abandoned = 0
    }

    private let claimConnection: QueueConnection
    private let recordConnection: QueueConnection
    private let controlConnection: QueueConnection
    private let listenConnection: QueueConnection

    public init(location: QueueLocation, options: QueueConsumerOptions, host: XCallbackHost.Host, format: OutputFormat,
                output: Int32, logger: Logger) {
        self.location = location
        self.options = options
        self.host = host
        self.format = format
        self.output = output
        self.logger = logger
        self.store = QueueStore(schema: location.schema, logger: logger)
        self.name = "\(ProcessInfo.processInfo.hostName):\(getpid())"
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        recorder = OutcomeBuffer()
        claimConnection = QueueConnection(location: location, role: "host claim", serverStatementTimeout: "4s",
                                          settings: QueueStore.claimSettings, logger: logger)
        recordConnection = QueueConnection(location: location, role: "host record", serverStatementTimeout: "4s", logger: logger)
        controlConnection = QueueConnection(location: location, role: "host heartbeat", serverStatementTimeout: "4s", logger: logger)
        listenConnection = QueueConnection(location: location, role: "host listen", serverStatementTimeout: nil, logger: logger)
        recorder.consumer = self
        countForMetrics(connections: [(claimConnection, .claim), (recordConnection, .record),
                                      (controlConnection, .heartbeat), (listenConnection, .listen)])
    }

    /// Outcomes this host recorded, and outcomes it could not record
    /// because its lease on them had run out.
    public var recordedCount: Int { counters.withLock { $0.recorded } }
    public var fencedCount: Int { counters.withLock { $0.fenced } }

    /// Connects, checks the schema and registers (a database that cannot be
    /// reached is an error here, after `waitForDatabase`, not a retry
    /// loop), then consumes until `stop()`; returns once every started
    /// request is recorded, or at once if stopped while waiting.
    public func run() throws(QueueError) {
        do {
            if options.waitForDatabase > .zero {
                let deadline = ContinuousClock.now + options.waitForDatabase
                let reached = try Blocking.run { [self] in
                    try await claimConnection.open(waitingUntil: deadline) { [self] in isStopping }
                }
                if !reached {
                    logger.notice("queue: stopped while waiting for the database")
                    _ = try? Blocking.run { [claimConnection] in await claimConnection.close() }
                    return
                }
            }
            let (store, name, lease, location, logger) = (store, name, options.lease, location, logger)
            let id = try Blocking.run { [claimConnection] in
                try await claimConnection.run { connection in
                    try await QueueSchema.check(connection, location: location, logger: logger)
                    return try await store.register(name: name, lease: lease, on: connection)
                }
            }
            hostID.store(id, ordering: .releasing)
        } catch let failure as ConnectFailure {
            throw QueueError("cannot use the queue: \(failure)")
        } catch {
            throw QueueError("cannot use the queue at \(location): \(QueueError.describe(error))")
        }
        logger.info("queue: consuming \(location) as host \(hostID.load(ordering: .acquiring)) (\(name))")

        let background = Task.detached { [self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.claimLoop() }
                group.addTask { await self.listenLoop() }
                group.addTask { await self.tickLoop() }
                group.addTask { await self.controlLoop() }
            }
        }
        let recording = Task.detached { [self] in await recordLoop() }

        host.serve(feed: feed, receiver: recorder)

        // Every started request has its record in the buffer: record them,
        // then leave, all by one deadline whatever the database does.
        let leaving = ContinuousClock.now + options.shutdownRecordingLimit
        leaveBy.withLock { $0 = leaving }
        stop()
        recorder.finish()
        _ = try? Blocking.run { await recording.value }
        background.cancel()
        // A LISTEN in progress ends when its connection does.
        _ = try? Blocking.run { [listenConnection] in await listenConnection.close() }
        _ = try? Blocking.run { await background.value }
        let left = feed.close() + unstarted.withLock { $0 }
        var problem: String?
        do {
            try Blocking.run { [self] in
                if !left.isEmpty {
                    try await claimConnection.retrying("returning unstarted requests", until: leaving) { [store] connection in
                        try await store.release(left, on: connection)
                    }
                }
                let released = try await controlConnection.retrying("leaving the queue", until: leaving) { [self] connection in
                    try await store.unregister(host: hostID.load(ordering: .acquiring), on: connection)
                }
                if released > 0 {
                    logger.warning("queue: \(released) request(s) whose outcome could not be recorded go back to the queue")
                }
            }
        } catch {
            problem = QueueError.describe(error)
        }
        let abandoned = counters.withLock { $0.abandoned }
        if problem != nil || abandoned > 0 {
            // Said once, with all it gives up on.
            var given: [String] = []
            if abandoned > 0 { given.append("\(abandoned) outcome(s) not recorded") }
            if problem != nil && !left.isEmpty { given.append("\(left.count) unstarted request(s) not returned") }
            if problem != nil { given.append("this host not unregistered") }
            logger.error("queue: stopped without the database after \(options.shutdownRecordingLimit) (\(problem ?? "it did not answer")): \(given.joined(separator: ", ")); those requests run again, on any host, once this host's lease of \(options.lease) runs out")
        }
        for connection in [claimConnection, recordConnection, controlConnection, listenConnection] {
            _ = try? Blocking.run { await connection.close() }
        }
    }

    /// Stops claiming; requests claimed and not started go back to the queue.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let left = feed.close()
        // Released by `run` before the host leaves, with their attempt undone.
        unstarted.withLock { $0.append(contentsOf: left) }
        inFlight.withLock { for request in left { $0[request.id] = nil } }
        wake.yield()
    }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    // MARK: claiming

    private func claimLoop() async {
        var iterator = wakes.makeAsyncIterator()
        var adopt = false
        // Suspects twice over (their host died again while they ran beside
        // others) run alone: drain, run one, and only then claim more.
        var isolatedWaiting = false
        // Suspects once over run beside fresh work, a few at a time.
        var besideWaiting = false
        while !isStopping && !Task.isCancelled {
            let (running, runningBeside) = inFlight.withLock { inFlight in
                (inFlight.count, inFlight.values.reduce(0) { $0 + ($1.beside ? 1 : 0) })
            }
            if isolatedWaiting && running > 0 {
                _ = await iterator.next()
                continue
            }
            let capacity = options.maxInFlight - running
            if capacity <= 0 {
                _ = await iterator.next()
                continue
            }
            let limit = min(options.batchSize, capacity)
            let besideLimit = besideWaiting ? min(limit, options.suspectsBeside - runningBeside) : 0
            var full = false
            do {
                let host = hostID.load(ordering: .acquiring)
                if adopt {
                    try await adoptLostClaims(host: host)
                    adopt = false
                }
                let (store, lease, alone) = (store, options.lease, isolatedWaiting)
                // Suspects beside first (they are older), then fresh work in
                // what room is left.
                let claims = try await claimConnection.run { connection -> [QueueStore.Claim] in
                    if alone { return [try await store.claimSuspect(host: host, lease: lease, on: connection)] }
                    var claims: [QueueStore.Claim] = []
                    if besideLimit > 0 {
                        claims.append(try await store.claimBeside(limit: besideLimit, host: host, lease: lease, on: connection))
                        if claims[0].hostGone { return claims }
                    }
                    let room = limit - (claims.first?.requests.count ?? 0)
                    if room > 0 { claims.append(try await store.claim(limit: room, host: host, lease: lease, on: connection)) }
                    return claims
                }
                if claims.contains(where: \.hostGone) {
                    try await registerAgain(replacing: host)
                    continue
                }
                await claimConnection.succeeded()
                for claim in claims { hand(claim.requests) }
                // The last claim saw the latest state.
                isolatedWaiting = claims.last?.isolatedWaiting ?? false
                besideWaiting = claims.last?.besideWaiting ?? false
                let claimed = claims.reduce(0) { $0 + $1.requests.count }
                if alone {
                    // That suspect runs alone. None left unleased: the rest
                    // waits for the next wake-up (another host may hold the
                    // last suspects for a moment), not a busy loop.
                    if claimed == 0 && !isolatedWaiting { continue }
                } else {
                    // Full: more may wait; claim again at once. Suspects
                    // beside that found no room wait for a record to make some.
                    full = claimed == limit
                }
            } catch {
                if Task.isCancelled || isStopping { break }
                adopt = true
                await claimConnection.failed("claiming requests", error)
                continue
            }
            if !full || isolatedWaiting { _ = await iterator.next() }
        }
    }

    /// A claim whose answer was lost may have committed: what this host
    /// holds and is not running is its to run. What it runs is read first:
    /// a request recorded while `held` runs is gone from the table but may
    /// be in its answer.
    private func adoptLostClaims(host: Int64) async throws {
        let known = inFlight.withLock { Set($0.keys) }
        let store = store
        let held = try await claimConnection.run { connection in try await store.held(by: host, on: connection) }
        let orphans = held.filter { !known.contains($0.id) }
        if !orphans.isEmpty {
            logger.info("queue: took up \(orphans.count) request(s) claimed before a connection was lost")
            hand(orphans)
        }
    }

    /// This host's lease ran out (it froze, or could not heartbeat): other
    /// hosts may have taken its requests; it goes on under a new id.
    private func registerAgain(replacing old: Int64) async throws {
        let (store, name, lease) = (store, name, options.lease)
        let renewed = try await claimConnection.run { connection in
            try await store.register(name: name, lease: lease, on: connection)
        }
        guard hostID.compareExchange(expected: old, desired: renewed, ordering: .acquiringAndReleasing).exchanged else {
            return  // the heartbeat registered it again first
        }
        queueMetrics?.leasesLost.add()
        logger.warning("queue: this host's lease ran out (no heartbeat for \(options.lease)); other hosts may run its requests again; it goes on as host \(renewed)")
    }

    /// Gives claimed requests to the host, or back to the queue if it is stopping.
    private func hand(_ requests: [ClaimedRequest]) {
        // A lease already running here (taken up twice: a lost claim's answer
        // and a later look at what this host holds) runs once.
        // One this host recorded is never run again: seeing it leased here
        // means a reading taken before its record committed.
        let unrecorded = written.withLock { written in requests.filter { !written.contains($0.id) } }
        let fresh = inFlight.withLock { inFlight in
            unrecorded.filter { request in
                if let running = inFlight[request.id], running.attempt == request.attempt, running.host == request.host {
                    return false
                }
                inFlight[request.id] = request
                return true
            }
        }
        guard !fresh.isEmpty else { return }
        let refused = feed.push(fresh)
        if !refused.isEmpty {
            unstarted.withLock { $0.append(contentsOf: refused) }
            inFlight.withLock { for request in refused { $0[request.id] = nil } }
        }
        countClaimed(fresh, refused: refused)
    }

    private func listenLoop() async {
        while !Task.isCancelled {
            do {
                let connection = try await listenConnection.open()
                try await connection.listen(on: store.channel) { notifications in
                    await listenConnection.succeeded()
                    for try await _ in notifications { wake.yield() }
                }
            } catch {
                if Task.isCancelled { return }
                await listenConnection.failed("listening for new requests", error)
            }
        }
    }

    private func tickLoop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: options.pollInterval)
            wake.yield()
        }
    }

    // MARK: leases

    /// Heartbeats three times per lease; once per lease, returns the
    /// requests of hosts whose lease ran out; once per prune interval, prunes.
    private func controlLoop() async {
        let beat = options.lease / 3
        var beats = 0
        var lastPrune = ContinuousClock.now - options.pruneInterval
        var mayPrune = true
        while !Task.isCancelled {
            try? await Task.sleep(for: beat)
            if Task.isCancelled { return }
            beats += 1
            do {
                let current = hostID.load(ordering: .acquiring)
                let (store, lease) = (store, options.lease)
                let alive = try await controlConnection.run(timeout: beat) { connection in
                    try await store.heartbeat(host: current, lease: lease, on: connection)
                }
                countHeartbeat(renewed: alive)
                try await readOldestReady(on: controlConnection)
                if !alive {
                    let (name, lease) = (name, options.lease)
                    let renewed = try await controlConnection.run { connection in
                        try await store.register(name: name, lease: lease, on: connection)
                    }
                    if hostID.compareExchange(expected: current, desired: renewed, ordering: .acquiringAndReleasing).exchanged {
                        queueMetrics?.leasesLost.add()
                        logger.warning("queue: this host's lease ran out (no heartbeat for \(options.lease)); other hosts may run its requests again; it goes on as host \(renewed)")
                    }
                }
                if beats % 3 == 0 {
                    // A claim the server committed after this host gave up on
                    // it (a lock wait past the deadline) is taken up here.
                    let known = inFlight.withLock { Set($0.keys) }
                    let host = hostID.load(ordering: .acquiring)
                    let held = try await controlConnection.run { connection in
                        try await store.held(by: host, olderThan: QueueConnection.statementTimeout * 2, on: connection)
                    }
                    let orphans = held.filter { !known.contains($0.id) }
                    if !orphans.isEmpty && !isStopping {
                        logger.info("queue: took up \(orphans.count) request(s) whose claim committed late")
                        hand(orphans)
                    }
                    let name = name
                    let (returned, dead) = try await controlConnection.run { connection in
                        try await store.rescue(recordedBy: name, on: connection)
                    }
                    countRescued(returned, dead: dead)
                    if returned > 0 {
                        logger.notice("queue: returned \(returned) request(s) of a host whose lease ran out to the queue")
                    }
                    if dead > 0 {
                        logger.warning("queue: \(dead) request(s) ran out of attempts and are dead (xcallback queue dead)")
                    }
                }
                if mayPrune && ContinuousClock.now - lastPrune >= options.pruneInterval {
                    lastPrune = .now
                    let retention = options.retention
                    do {
                        let pruned = try await controlConnection.run(timeout: .seconds(300)) { connection in
                            try await store.prune(retention: retention, on: connection)
                        }
                        if pruned > 0 { logger.info("queue: pruned \(pruned) outcome(s) past the retention") }
                    } catch where QueueError.isPermissionDenied(error) {
                        // A host role (QueueGrants) deletes no outcome.
                        mayPrune = false
                        logger.notice("queue: this host's database role may not delete outcomes, so it does not prune them; run xcallback queue prune as the queue's owner")
                    }
                }
                await controlConnection.succeeded()
            } catch {
                if Task.isCancelled { return }
                await controlConnection.failed("heartbeat", error)
            }
        }
    }

    // MARK: recording

    /// The request a record belongs to, with its lease.
    fileprivate func claim(of id: Int64) -> ClaimedRequest? { inFlight.withLock { $0[id] } }

    private func recordLoop() async {
        for await _ in recorder.arrivals {
            await recordWaiting()
        }
        // What arrived last, by the stop's deadline (set before arrivals end).
        await recordWaiting()
    }

    /// Records everything waiting, in batches, retrying until it succeeds;
    /// once a stop has begun, only until its deadline (`leaveBy`).
    private func recordWaiting() async {
        // Read again at every step: a stop may begin while a batch is retried.
        func deadline() -> ContinuousClock.Instant? { leaveBy.withLock { $0 } }
        func pastDeadline() -> Bool { deadline().map { ContinuousClock.now >= $0 } ?? false }
        while true {
            let batch = recorder.take(max: 4_096)
            if batch.isEmpty { return }
            if pastDeadline() {
                abandon(batch)
                continue
            }
            var recorded = Set<Int64>()
            var retried = false
            var abandoned = false
            while true {
                do {
                    let (store, name, retried) = (store, name, retried)
                    recorded = try await recordConnection.run(until: deadline()) { connection in
                        var recorded = try await store.record(batch, host: name, on: connection)
                        if retried && recorded.count < batch.count {
                            // After a lost connection, some may have committed the first time.
                            let missing = batch.filter { !recorded.contains($0.id) }
                            recorded.formUnion(try await store.alreadyRecorded(missing, host: name, on: connection))
                        }
                        return recorded
                    }
                    await recordConnection.succeeded()
                    break
                } catch {
                    if pastDeadline() {
                        abandon(batch)
                        abandoned = true
                        break
                    }
                    await recordConnection.failed("recording outcomes", error, until: deadline())
                    retried = true
                }
            }
            if abandoned { continue }
            let fenced = batch.count - recorded.count
            if fenced > 0 { await reportFenced(batch.filter { !recorded.contains($0.id) }) }
            counters.withLock {
                $0.recorded += recorded.count
                $0.fenced += fenced
            }
            countRecorded(recorded.count, fenced: fenced)
            inFlight.withLock { for item in batch { $0[item.id] = nil } }
            wake.yield()
            // One record per request, whatever the batches held.
            let committed = batch.filter { recorded.contains($0.id) }
            let fresh = written.withLock { written in committed.filter { written.insert($0.id) } }
            let repeated = committed.count - fresh.count
            if repeated > 0 { logger.debug("queue: \(repeated) record(s) already written by this host, not written again") }
            deliver(fresh.map(\.record))
        }
    }

    /// Says what became of outcomes this host could not record: where their
    /// requests are now, not a guess.
    private func reportFenced(_ fenced: [FinishedRequest]) async {
        let (store, host, name) = (store, hostID.load(ordering: .acquiring), name)
        let ids = fenced.map(\.id)
        let found = try? await recordConnection.run { connection in
            try await store.fenced(ids, host: host, name: name, on: connection)
        }
        if let found, found.count == fenced.count {
            logger.warning("queue: \(found.description)")
        } else {
            logger.warning("queue: \(fenced.count) outcome(s) not recorded: this host's lease on them had run out; they run again under a new attempt number")
        }
    }

    /// A stop's deadline passed before `batch` could be recorded: its
    /// requests run again once this host's lease runs out (counted, and said
    /// once at the end of `run`).
    private func abandon(_ batch: [FinishedRequest]) {
        inFlight.withLock { for item in batch { $0[item.id] = nil } }
        counters.withLock { $0.abandoned += batch.count }
    }

    /// Writes (or opens, with `--open`) records once they are committed.
    private func deliver(_ records: [OutcomeRecord]) {
        guard output >= 0 else { return }
        var bytes: [UInt8] = []
        for record in records where !host.openCallback(of: record) {
            format.write(record, to: &bytes)
        }
        guard !bytes.isEmpty else { return }
        let complete = RecordWrite.all(output, bytes)
        if !complete {
            // A closed stdout ends the host quietly, as for `run`.
            host.requestStop()
            stop()
        }
    }
}

/// Records handed over by the host's threads, waiting to be recorded.
final class OutcomeBuffer: RecordReceiver, @unchecked Sendable {
    // @unchecked: `consumer` is set once in QueueConsumer.init, before any record.
    weak var consumer: QueueConsumer?
    private let waiting = Mutex<[FinishedRequest]>([])
    let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation

    init() {
        (arrivals, arrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func receive(_ record: OutcomeRecord) {
        let id = Int64(bitPattern: record.sequence)
        guard let claim = consumer?.claim(of: id) else { return }
        let finished = FinishedRequest(
            id: id, attempt: claim.attempt, host: claim.host, outcome: record.outcome.kind.rawValue,
            params: StoredParameters.encode(record.outcome.parameters), callback: record.callback ?? "", record: record)
        waiting.withLock { $0.append(finished) }
        arrived.yield()
    }

    func take(max: Int) -> [FinishedRequest] {
        waiting.withLock { waiting in
            let batch = Array(waiting.prefix(max))
            waiting.removeFirst(batch.count)
            return batch
        }
    }

    func finish() { arrived.finish() }
}
#endif
