import DequeModule
import XCallbackSystem

/// Answers `Timeout` for requests still pending at their deadline.
///
/// Every request has the same timeout, so deadlines nearly always arrive
/// in the order requests are registered and a queue kept in deadline order
/// from its back replaces a heap. (One the general path takes over from a
/// lane keeps the deadline of when it was sent: it goes in ahead of the
/// requests registered since.) Finished requests
/// are not removed one by one (that would cost a search per request); the
/// queue is compacted when it grows past twice the unfinished count, which
/// keeps memory proportional to the requests in flight.
final class DeadlineTimer: Sendable {
    private struct State {
        var queue = Deque<PendingRequest>()
        var stopped = false
    }

    private let state = ConditionLock(State())
    private let onExpiry: @Sendable (PendingRequest) -> Void
    /// Runs at every wake-up (at least every `resolution`), with the time:
    /// how calls that are in no queue (the fast lane's) meet their deadline.
    private let onTick: @Sendable (UInt64) -> Void

    /// How late a deadline may fire: the timer re-checks at least this often.
    static let resolution: UInt64 = 50_000_000

    init(onExpiry: @escaping @Sendable (PendingRequest) -> Void,
         onTick: @escaping @Sendable (UInt64) -> Void = { _ in }) {
        self.onExpiry = onExpiry
        self.onTick = onTick
    }

    func start() {
        Threads.detach { [self] in run() }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        state.broadcast()
    }

    /// Answers `Timeout` for everything still pending now (end of the
    /// shutdown grace period).
    func expireAll() {
        let due = state.withLock { state -> [PendingRequest] in
            defer { state.queue.removeAll() }
            return state.queue.filter { !$0.isFinished }
        }
        for request in due { onExpiry(request) }
    }

    /// The requests waiting for their outcome now (a metrics scrape's).
    var unfinished: [PendingRequest] {
        state.withLock { $0.queue.filter { !$0.isFinished } }
    }

    func add(_ request: PendingRequest) {
        state.withLock { state in
            // Usually last: deadlines grow with time. A request adopted from
            // a worker's lane keeps its older one (`handOver`), and when a
            // stopped worker's lane expires thousands at once behind as many
            // newer requests, walking back over them for each, under this
            // lock, held the input threads that add for seconds: found by
            // halves instead, after any of the same deadline.
            var index = state.queue.endIndex
            if index > state.queue.startIndex, state.queue[index - 1].deadline > request.deadline {
                var low = state.queue.startIndex
                var high = index - 1
                while low < high {
                    let middle = low + (high - low) / 2
                    if state.queue[middle].deadline > request.deadline { high = middle } else { low = middle + 1 }
                }
                index = low
            }
            state.queue.insert(request, at: index)
            if state.queue.count > 1024 && state.queue.count % 1024 == 0 {
                let unfinished = state.queue.reduce(0) { $0 + ($1.isFinished ? 0 : 1) }
                if state.queue.count > 2 * unfinished {
                    state.queue.removeAll(where: \.isFinished)
                }
            }
        }
    }

    /// Drops `request` if it is the newest entry (it was answered at once).
    func removeIfLast(_ request: PendingRequest) {
        state.withLock { state in
            if state.queue.last === request { state.queue.removeLast() }
        }
    }

    private func run() {
        while true {
            let head = state.withLock { $0.queue.first?.deadline }
            // Asleep with an empty queue; otherwise up to the head's deadline,
            // re-checking at least every `resolution` (a compaction may have
            // moved the head).
            // Never asleep for good: adding a request then needs no wake-up call
            // (a broadcast per request when the queue keeps emptying).
            let wake = head.map { min($0, MonotonicClock.now + Self.resolution) } ?? MonotonicClock.now + Self.resolution
            let (due, stopped) = state.wait(
                until: { state in
                    if state.stopped { return true }
                    guard let first = state.queue.first else { return false }
                    // Asleep on an empty queue: wake to compute a deadline.
                    return head == nil || first.isFinished || first.deadline <= MonotonicClock.now
                },
                deadline: wake
            ) { state -> ([PendingRequest], Bool) in
                var due: [PendingRequest] = []
                let now = MonotonicClock.now
                while let first = state.queue.first, first.isFinished || first.deadline <= now {
                    state.queue.removeFirst()
                    if !first.isFinished { due.append(first) }
                }
                return (due, state.stopped)
            }
            for request in due { onExpiry(request) }
            if stopped { return }
            onTick(MonotonicClock.now)
        }
    }
}
