import XCallbackSystem

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

/// One input stream's lines and records: stdin, a file, the FIFO, one
/// socket connection or the queue's feed. The stream keeps them anyway
/// (its lines number its requests, its records pace its reading), so its
/// input kind reads them at a scrape (`InputMetrics.open`) instead of
/// counting every line and record a second time on the request path.
public final class StreamCounts: Sendable {
    /// Lines handed to the dispatcher, each owing one record: written by
    /// the thread that reads the stream.
    public let lines = Counter()
    /// Records emitted: written under the lock of the stream's sink.
    public let records = Counter()

    public init() {}
}

/// What one kind of input read and wrote.
public final class InputMetrics: Sendable {
    public let kind: InputKind
    /// The streams open now, and the lines and records of those closed.
    private let streams = Lock(Streams())
    /// Lines answered `InvalidURL`.
    public let invalidLines = Counter()
    public let bytes = Counter()
    public let connectionsOpened = Counter()
    public let connectionsClosed = Counter()
    let refused = CounterArray(count: RefusalReason.allCases.count)
    /// Nanoseconds the input's reading waited because its records were not
    /// being taken (a slow reader of stdout, a socket client not reading).
    public let outputWaitNanoseconds = Counter()

    private struct Streams {
        var open: [StreamCounts] = []
        var closedLines: UInt64 = 0
        var closedRecords: UInt64 = 0
    }

    init(kind: InputKind) { self.kind = kind }

    /// Counts `stream`'s lines and records as this input's.
    public func open(_ stream: StreamCounts) { streams.withLock { $0.open.append(stream) } }

    /// `stream` is done, its last record emitted: its counts are kept, the
    /// stream let go.
    public func close(_ stream: StreamCounts) {
        streams.withLock { streams in
            guard let index = streams.open.firstIndex(where: { $0 === stream }) else { return }
            streams.open.remove(at: index)
            streams.closedLines &+= stream.lines.current
            streams.closedRecords &+= stream.records.current
        }
    }

    /// Lines handed to the dispatcher (each owes one record), by every
    /// stream of this kind so far.
    public var lines: UInt64 {
        streams.withLock { streams in streams.open.reduce(streams.closedLines) { $0 &+ $1.lines.current } }
    }

    /// Records written (or handed to the queue), likewise.
    public var records: UInt64 {
        streams.withLock { streams in streams.open.reduce(streams.closedRecords) { $0 &+ $1.records.current } }
    }

    public func refused(_ reason: RefusalReason) { refused.add(at: reason.rawValue) }
    func refusedCount(_ reason: RefusalReason) -> UInt64 { refused.value(at: reason.rawValue) }
}
