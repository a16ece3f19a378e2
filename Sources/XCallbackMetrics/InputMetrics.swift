/// Where request lines come from: the `input` label.
public enum InputKind: Int, Sendable, CaseIterable {
    case stdin, file, fifo, socket, queue

    public var label: String {
        switch self {
        case .stdin: "stdin"
        case .file: "file"
        case .fifo: "fifo"
        case .socket: "socket"
        case .queue: "queue"
        }
    }
}

/// Why a connection was turned away: the `reason` label.
public enum RefusalReason: Int, Sendable, CaseIterable {
    /// Past the host's connection limits (`Busy`).
    case busy
    /// From a user other than the host's own and root.
    case peer

    public var label: String {
        switch self {
        case .busy: "busy"
        case .peer: "peer"
        }
    }
}

/// What one kind of input read and wrote.
public final class InputMetrics: Sendable {
    public let kind: InputKind
    /// Lines handed to the dispatcher (each owes one record).
    public let lines = Counter()
    /// Lines answered `InvalidURL`.
    public let invalidLines = Counter()
    public let bytes = Counter()
    public let connectionsOpened = Counter()
    public let connectionsClosed = Counter()
    let refused = CounterArray(count: RefusalReason.allCases.count)
    public let records = Counter()
    /// Nanoseconds the input's reading waited because its records were not
    /// being taken (a slow reader of stdout, a socket client not reading).
    public let outputWaitNanoseconds = Counter()

    init(kind: InputKind) { self.kind = kind }

    public func refused(_ reason: RefusalReason) { refused.add(at: reason.rawValue) }
    func refusedCount(_ reason: RefusalReason) -> UInt64 { refused.value(at: reason.rawValue) }
}
