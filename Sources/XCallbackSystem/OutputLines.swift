/// Cuts what a plug-in writes to its stdout or stderr into log lines: one
/// line of output is one log line, however it arrives (a byte at a time,
/// or a megabyte with no newline), and none is longer than `maxLength`
/// bytes. What it writes is untrusted text: `PrintableText` escapes it
/// where it is logged, so no control byte or terminal sequence reaches the
/// operator's terminal or log file.
public struct OutputLines {
    /// A line's bytes past this are cut (and counted): a plug-in that
    /// writes a gigabyte without a newline costs the host this much.
    public static let maxLength = 4096

    /// One finished line: its first `maxLength` bytes at most, and how many
    /// more it had.
    public struct Line: Equatable {
        public var text: [UInt8]
        public var cut: Int
    }

    private var pending: [UInt8] = []
    private var cut = 0

    public init() {}

    /// Takes `bytes` and hands each line they finish to `emit`, without its
    /// newline (a CR before it is dropped too).
    public mutating func take(_ bytes: UnsafeRawBufferPointer, emit: (Line) -> Void) {
        var rest = bytes[...]
        while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
            keep(rest[rest.startIndex..<newline])
            finish(emit)
            rest = rest[(newline + 1)...]
        }
        keep(rest)
    }

    /// The unfinished last line, if any (the plug-in's output ended).
    public mutating func end(emit: (Line) -> Void) {
        if !pending.isEmpty || cut > 0 { finish(emit) }
    }

    private mutating func keep(_ bytes: Slice<UnsafeRawBufferPointer>) {
        let room = Self.maxLength - pending.count
        pending.append(contentsOf: bytes.prefix(room))
        cut += max(0, bytes.count - room)
    }

    private mutating func finish(_ emit: (Line) -> Void) {
        if pending.last == UInt8(ascii: "\r") && cut == 0 { pending.removeLast() }
        emit(Line(text: pending, cut: cut))
        pending.removeAll(keepingCapacity: pending.capacity <= 2 * Self.maxLength)
        cut = 0
    }
}

/// How many lines a plug-in may log: a token bucket, so a burst passes and
/// a flood is dropped (and counted) rather than filling the operator's log
/// or holding the host's stderr.
public struct OutputRateLimit {
    /// Lines a second, sustained.
    public static let rate: UInt64 = 100
    /// Lines at once.
    public static let burst: UInt64 = 500

    private var tokens = Self.burst * 1_000_000_000
    private var updated: UInt64
    /// Lines dropped since the last one let through.
    public private(set) var dropped = 0

    public init(now: UInt64) {
        updated = now
    }

    /// Whether a line may be logged at `now` (monotonic ns). When it may
    /// after some were dropped, `droppedBefore` says how many.
    public mutating func admit(now: UInt64) -> (admitted: Bool, droppedBefore: Int) {
        let elapsed = now &- updated
        updated = now
        // Tokens are kept in nanoseconds-of-a-line so no rounding is lost;
        // the product saturates (a long-idle source is simply full).
        let (gained, overflow) = elapsed.multipliedReportingOverflow(by: Self.rate)
        let full = Self.burst * 1_000_000_000
        tokens = overflow ? full : min(full, tokens &+ min(gained, full))
        guard tokens >= 1_000_000_000 else {
            dropped += 1
            return (false, 0)
        }
        tokens -= 1_000_000_000
        defer { dropped = 0 }
        return (true, dropped)
    }

    /// Lines dropped and not yet reported, now reported.
    public mutating func takeDropped() -> Int {
        defer { dropped = 0 }
        return dropped
    }
}
