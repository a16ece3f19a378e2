/// What a host's work with the durable queue went through: the
/// `xcallback_queue_*` families, written only by a host that consumes a
/// queue (`run --queue`). The queue module counts here (this module knows
/// nothing of databases); every count is a relaxed atomic add, made once
/// per batch claimed or recorded, never per request and never under a lock.
public final class QueueMetrics: Sendable {
    /// Leases taken and handed to the dispatcher (a claim whose answer was
    /// lost counts when the host takes it up).
    public let claimed = Counter()
    /// Of those, requests an earlier claim had already taken (attempt > 1).
    public let reruns = Counter()
    /// Outcomes recorded (committed) by this host.
    public let recorded = Counter()
    /// Outcomes not recorded: this host's lease on them had run out.
    public let fenced = Counter()
    /// Requests of hosts whose lease ran out, returned to the queue by this host.
    public let rescued = Counter()
    /// Requests retired dead by this host (out of attempts).
    public let dead = Counter()
    /// Heartbeats that renewed this host's lease.
    public let leaseRenewals = Counter()
    /// Times this host found its lease had run out and registered again.
    public let leasesLost = Counter()
    let databaseErrors = CounterArray(count: QueueDatabaseErrorKind.allCases.count)
    /// The age of the oldest request waiting to be claimed, in nanoseconds,
    /// as of its last reading; `unread` before the first.
    let oldestReadyNanoseconds = Counter()
    /// 1 once the host consumes a queue: the families are written from then on.
    let consuming = Counter()

    static let unread = UInt64.max

    init() { oldestReadyNanoseconds.set(Self.unread) }

    /// The host consumes a queue: its families are served from now on.
    public func startConsuming() { consuming.set(1) }

    public func databaseError(_ kind: QueueDatabaseErrorKind) { databaseErrors.add(at: kind.rawValue) }

    /// The oldest ready request's age, as the database read it (0: none waits).
    public func oldestReady(seconds: Double) {
        oldestReadyNanoseconds.set(seconds > 0 ? UInt64(min(seconds, 1e9) * 1e9) : 0)
    }

    var isConsuming: Bool { consuming.current != 0 }
    func databaseErrorCount(_ kind: QueueDatabaseErrorKind) -> UInt64 { databaseErrors.value(at: kind.rawValue) }
    /// Seconds, or nil before the first reading.
    var oldestReadySeconds: Double? {
        let value = oldestReadyNanoseconds.current
        return value == Self.unread ? nil : Double(value) / 1e9
    }
}

/// Which of the queue's work failed: the `kind` label of
/// `xcallback_queue_database_errors_total`. A fixed list: the error's text
/// is logged, never a label.
public enum QueueDatabaseErrorKind: Int, Sendable, CaseIterable {
    /// A connection could not be opened (any of the host's connections).
    case connect
    /// Claiming requests (and taking up a claim whose answer was lost, and
    /// returning unstarted requests at a stop).
    case claim
    /// Recording outcomes.
    case record
    /// The control connection's work: heartbeats, returning the requests of
    /// hosts whose lease ran out, pruning, the oldest ready request's age,
    /// leaving the queue at a stop.
    case heartbeat
    /// Listening for new requests (LISTEN).
    case listen

    public var label: String {
        switch self {
        case .connect: "connect"
        case .claim: "claim"
        case .record: "record"
        case .heartbeat: "heartbeat"
        case .listen: "listen"
        }
    }
}
