import CXCallback
import Synchronization
import XCallbackBridge
import XCallbackSystem

/// Every request the host has handed to a handler and not yet ended, and
/// the one clock that ends those past their deadline. A request waits in
/// one of three places, by the path that carries it:
/// - the general path's requests, in deadline order (`DeadlineTimer`);
/// - the call an input stream's fast lane is inside a handler with, at
///   most one per lane (`FastLane.inFlight`);
/// - the requests a worker's lane has sent and not seen answered
///   (`WorkerSlots`).
/// One sweep, at every tick of the clock, applies the one deadline rule to
/// all three: a request sent before `now - timeout` is over, and ends in
/// `Timeout` through its owner (`Dispatcher.expire`).
final class InFlightTable: Sendable {
    private let timeout: UInt64
    private let links = Links()
    private let lanes = Lock<[WeakLane]>([])
    /// Held strongly until they have ended: a weakly referenced object
    /// keeps its counts in a side table, which makes every retain of it
    /// slow, and the input thread retains its worker for every request it
    /// sends (`currentWorker`).
    private let workers = Lock<[WorkerProcess]>([])
    private let timer: DeadlineTimer
    /// Set by `expireAll`: from then on every tick ends whatever is in
    /// flight, so a request that starts after a stop's grace period (the
    /// next hop of a chain whose answer came as the grace period ended, a
    /// decline's next route) ends with it, not at its own deadline.
    private let expiringAll = Atomic<Bool>(false)

    init(timeout: Duration) {
        self.timeout = timeout.nanoseconds
        let links = links
        timer = DeadlineTimer(onExpiry: { links.owner?.expire($0) }, onTick: { links.table?.tick(now: $0) })
        links.table = self
    }

    /// Starts the clock; `owner` ends what it finds over. Held weakly: the
    /// owner owns the table.
    func start(owner: some InFlightOwner) {
        links.owner = owner
        timer.start()
    }

    func stop() { timer.stop() }

    /// A general-path request, until it ends or its deadline passes.
    func add(_ request: PendingRequest) { timer.add(request) }

    /// Drops `request` if it was the last one added (it was answered at once).
    func removeIfLast(_ request: PendingRequest) { timer.removeIfLast(request) }

    /// An input stream's lane, watched while it lives.
    func watch(_ lane: FastLane) {
        lanes.withLock { lanes in
            lanes.removeAll { $0.lane == nil }
            lanes.append(WeakLane(lane: lane))
        }
    }

    /// A worker whose lane has sent requests, watched while it lives.
    func watch(_ worker: WorkerProcess) {
        workers.withLock { $0.append(worker) }
    }

    /// The workers still running; an ended one is let go (its lane's
    /// requests were all taken back when it ended).
    private var runningWorkers: [WorkerProcess] {
        workers.withLock { workers in
            workers.removeAll { $0.hasEnded }
            return workers
        }
    }

    /// Ends every request still in flight, wherever it waits, now and at
    /// every tick from now on (a stop's grace period is over).
    func expireAll() {
        expiringAll.store(true, ordering: .releasing)
        timer.expireAll()
        sweep(now: .max)
    }

    /// The clock's tick: what is past its deadline ends, or everything once
    /// `expireAll` was called.
    private func tick(now: UInt64) {
        if expiringAll.load(ordering: .acquiring) {
            timer.expireAll()
            sweep(now: .max)
        } else {
            sweep(now: now)
        }
    }

    /// How many requests each plug-in's handlers hold now, wherever they
    /// wait (`run --metrics`). A scrape's walk, so the requests themselves
    /// pay nothing for it; a request the general path has not yet handed
    /// to a route is nobody's yet.
    func countByPlugin() -> [String: Int] {
        var counts: [String: Int] = [:]
        for request in timer.unfinished {
            if let plugin = request.currentPlugin { counts[plugin, default: 0] += 1 }
        }
        for lane in lanes.withLock({ $0.compactMap(\.lane) }) {
            let marker = lane.inFlight.load(ordering: .acquiring)
            if marker != 0, let plugin = HostAPI.replies.plugin(of: xcallback_reply(token: marker - 1)) {
                counts[plugin, default: 0] += 1
            }
        }
        for worker in runningWorkers {
            let count = worker.laneRequestCount
            if count > 0 { counts[worker.ready.info.name, default: 0] += count }
        }
        return counts
    }

    /// Every request sent before `now - timeout` (all of them with `.max`)
    /// is over: the general path's are the timer's own; these are the lanes'.
    private func sweep(now: UInt64) {
        guard let owner = links.owner else { return }
        let cutoff = now == .max ? .max : (now > timeout ? now - timeout : 0)
        for worker in runningWorkers { worker.expireSlots(startedBefore: cutoff) }
        for lane in lanes.withLock({ $0.compactMap(\.lane) }) { owner.expireLaneCall(in: lane, startedBefore: cutoff) }
    }
}

/// Who ends the requests the table finds over.
protocol InFlightOwner: AnyObject, Sendable {
    /// A general-path request's deadline passed.
    func expire(_ request: PendingRequest)
    /// The call `lane` is inside a handler with, if it began before `cutoff`.
    func expireLaneCall(in lane: FastLane, startedBefore cutoff: UInt64)
}

/// What the clock's callbacks reach, held weakly: the table owns the
/// clock, and the owner owns the table.
private final class Links: @unchecked Sendable {
    // @unchecked: both are written once before the clock's thread exists
    // (`table` in the table's init, `owner` in `start`), then only read.
    weak var table: InFlightTable?
    weak var owner: (any InFlightOwner)?
}

/// A lane the table watches without keeping it alive.
struct WeakLane {
    weak var lane: FastLane?
}

