import Synchronization
import XCallbackMetrics

/// The host's half of a worker's fast lane: the requests the input thread
/// sent to one worker straight from their lines, each in a slot of a table
/// made once, so a request answered with success or cancel costs the host
/// no heap object, no lock and no timer entry (`Dispatcher.submitToWorker`).
///
/// A slot is claimed by its request's id (ids are the worker's frame ids,
/// consecutive, so slot `id % capacity`). Its state word is 0 when free,
/// the id while the request is out (with `returnedBit` once the worker said
/// the handler returned), or `taken` while one thread reads it: the reply
/// thread for an answer, the deadline timer for a timeout, the exit scan
/// for a worker that died. Whoever takes a slot empties it; a comparison
/// with the id (never a bare "busy") makes an answer for a request the
/// timer already took, or a slot reused since, miss instead of misfire.
final class WorkerSlots: @unchecked Sendable {
    // @unchecked: a slot's fields are written by the input thread while its
    // state is 0 and read by the one thread that took it; the state words
    // order both (release on publish, acquire on take).

    /// What the host keeps of a request while the worker runs it.
    struct Request {
        var id: UInt64 = 0
        var sequence: UInt64 = 0
        /// `request_id`.
        var requestID: UInt64 = 0
        var handler: Int = 0
        var sink: OutputSink?
        /// The request frame sent, whole: the one form the lane builds, from
        /// which the general path takes the line as read if it takes the
        /// request over (an error, a decline, a timeout, a crash).
        var frame: [UInt8] = []
        /// `frame`'s capacity, noted as the slot is published: the reply
        /// thread reads it here, with the rest, and leaves the frame's
        /// buffer alone (in the input thread's cache, for the next fill).
        var frameCapacity = 0
        /// The decoded `x-success`, `x-error` and `x-cancel`, back to back.
        var callbacks: [UInt8] = []
        var successCount = 0
        var errorCount = 0
        var cancelCount = 0
        /// When it was sent on the fine clock, if its latency is sampled
        /// (0: not); its coarse stamp, the deadline's, is `started(_:)`.
        var fineStarted: UInt64 = 0
    }

    /// As many as one input stream keeps in flight (`InputLoop.maxInFlight`):
    /// past it, a request takes the general path.
    static let capacity = Int(InputLoop.maxInFlight)
    private static let mask = UInt64(capacity - 1)
    static let returnedBit: UInt64 = 1 << 63
    /// Room a slot keeps for the next line.
    private static let keptBytes = 4096
    static let taken: UInt64 = .max

    /// Who takes a request over for the general path.
    let owner: any WorkerLaneOwner
    /// The worker's plug-in's counts (`run --metrics`; nil when off), and
    /// the same unretained, for the reply thread (`Dispatcher.end`).
    let counts: PluginMetrics?
    let unretainedCounts: Unmanaged<PluginMetrics>?
    /// Which of the requests sent the lane times on the fine clock.
    let sampler = LatencySampler()
    private let states: UnsafeMutablePointer<Atomic<UInt64>>
    /// Monotonic nanoseconds when each slot's request was sent: atomic, so
    /// the deadline timer may read it before it takes the slot.
    private let startTimes: UnsafeMutablePointer<Atomic<UInt64>>
    private let requests: UnsafeMutablePointer<Request>
    /// Requests out now: a retiring worker stops when none is left.
    private let outstanding = Atomic<Int>(0)

    init(owner: any WorkerLaneOwner, counts: PluginMetrics? = nil) {
        self.owner = owner
        self.counts = counts
        unretainedCounts = counts.map(Unmanaged.passUnretained)
        states = .allocate(capacity: Self.capacity)
        startTimes = .allocate(capacity: Self.capacity)
        requests = .allocate(capacity: Self.capacity)
        for index in 0..<Self.capacity {
            (states + index).initialize(to: Atomic(0))
            (startTimes + index).initialize(to: Atomic(0))
            (requests + index).initialize(to: Request())
        }
    }

    deinit {
        requests.deinitialize(count: Self.capacity)
        requests.deallocate()
        states.deinitialize(count: Self.capacity)
        states.deallocate()
        startTimes.deinitialize(count: Self.capacity)
        startTimes.deallocate()
    }

    var isEmpty: Bool { outstanding.load(ordering: .sequentiallyConsistent) == 0 }

    /// Requests sent and not yet taken back (a metrics scrape's count).
    var count: Int { max(outstanding.load(ordering: .relaxed), 0) }

    /// The slot for `id`, if it is free: fill it with `fill`, then
    /// `publish(id)`. Only the thread that sends (under the writer's lock).
    func freeSlot(for id: UInt64) -> UnsafeMutablePointer<Request>? {
        let index = Int(id & Self.mask)
        guard states[index].load(ordering: .acquiring) == 0 else { return nil }
        return requests + index
    }

    /// Makes the filled slot of `id`, sent at `started`, visible to the
    /// other threads.
    func publish(_ id: UInt64, started: UInt64) {
        let index = Int(id & Self.mask)
        requests[index].frameCapacity = requests[index].frame.capacity
        outstanding.add(1, ordering: .sequentiallyConsistent)
        startTimes[index].store(started, ordering: .relaxed)
        states[index].store(id, ordering: .releasing)
    }

    /// When request `id` was sent (its slot's time, whoever holds it now).
    func started(_ id: UInt64) -> UInt64 { startTimes[Int(id & Self.mask)].load(ordering: .relaxed) }

    /// Takes back a slot published a moment ago that nobody else took
    /// (the worker exited before its frame went out); false if one did.
    func unpublish(_ id: UInt64) -> Bool {
        let index = Int(id & Self.mask)
        guard states[index].compareExchange(expected: id, desired: 0, ordering: .acquiringAndReleasing).exchanged else {
            return false
        }
        requests[index].sink = nil
        outstanding.subtract(1, ordering: .releasing)
        return true
    }

    /// The worker said request `id`'s handler returned: a timeout then no
    /// longer means the worker is stuck in it.
    func markReturned(_ id: UInt64) -> Bool {
        states[Int(id & Self.mask)].compareExchange(expected: id, desired: id | Self.returnedBit,
                                                     ordering: .relaxed).exchanged
    }

    /// Takes request `id` if it is still out; `body` reads the slot (and
    /// whether its handler returned), then the slot is emptied.
    func take<R>(_ id: UInt64, _ body: (inout Request, _ returned: Bool) -> R) -> R? {
        let index = Int(id & Self.mask)
        var current = states[index].load(ordering: .relaxed)
        while current & ~Self.returnedBit == id && current != Self.taken {
            let (exchanged, original) = states[index].compareExchange(expected: current, desired: Self.taken,
                                                                      ordering: .acquiringAndReleasing)
            if exchanged {
                let result = body(&requests[index], current & Self.returnedBit != 0)
                requests[index].sink = nil
                // A long line's room is not kept for the worker's life.
                if requests[index].frameCapacity > Self.keptBytes {
                    requests[index].frame = []
                    requests[index].frameCapacity = 0
                }
                if requests[index].callbacks.capacity > Self.keptBytes { requests[index].callbacks = [] }
                states[index].store(0, ordering: .releasing)
                outstanding.subtract(1, ordering: .releasing)
                return result
            }
            current = original
        }
        return nil
    }

    /// Takes every request out whose `started` is before `cutoff` (all with
    /// `.max`), in id order.
    func takeAll<R>(startedBefore cutoff: UInt64, _ body: (inout Request, _ returned: Bool) -> R) -> [R] {
        guard !isEmpty else { return [] }
        var ids: [UInt64] = []
        for index in 0..<Self.capacity {
            let current = states[index].load(ordering: .acquiring)
            guard current != 0, current != Self.taken else { continue }
            // Read before the take: a stale time only delays it a tick.
            if cutoff == .max || startTimes[index].load(ordering: .relaxed) < cutoff {
                ids.append(current & ~Self.returnedBit)
            }
        }
        return ids.sorted().compactMap { take($0, body) }
    }
}

extension UnsafeMutablePointer where Pointee == Atomic<UInt64> {
    fileprivate subscript(index: Int) -> Atomic<UInt64> {
        unsafeAddress { UnsafePointer(self + index) }
    }
}

/// A worker's slots, made at the lane's first request: a load is one
/// atomic read (Synchronization's `AtomicLazyReference` is generic across a
/// module boundary, so each load looked its metadata up at run time).
struct LazySlots: ~Copyable {
    private let address = Atomic<UInt>(0)

    init() {}

    func load() -> WorkerSlots? {
        let bits = address.load(ordering: .acquiring)
        guard bits != 0, let raw = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<WorkerSlots>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Stores `slots` unless another thread stored some first; returns the
    /// ones stored.
    func storeIfNil(_ slots: WorkerSlots) -> WorkerSlots {
        let bits = UInt(bitPattern: Unmanaged.passRetained(slots).toOpaque())
        let (exchanged, _) = address.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing)
        guard exchanged else {
            Unmanaged<WorkerSlots>.passUnretained(slots).release()
            return load()!
        }
        return slots
    }

    deinit {
        let bits = address.load(ordering: .acquiring)
        if bits != 0, let raw = UnsafeRawPointer(bitPattern: bits) { Unmanaged<WorkerSlots>.fromOpaque(raw).release() }
    }
}
