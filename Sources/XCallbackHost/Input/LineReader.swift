import XCallbackMetrics
import XCallbackSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Splits a byte stream into request lines (docs/usage.md, "run"): LF or CRLF,
/// white space trimmed, blank lines and `#` comments skipped. A line longer
/// than the limit is not kept: its bytes are counted and skipped to its end,
/// so one huge line costs no memory and the next line reads normally.
final class LineReader {
    enum Line {
        /// The bytes stay valid while `storage` is held, whatever the
        /// reader does next.
        case text(UnsafeBufferPointer<UInt8>, storage: InputBuffer)
        /// A line past the limit: its length, and its first bytes (for the
        /// `jsonl` record's `input`).
        case overlong(byteCount: Int, prefix: [UInt8])
        /// A line that arrived after the host was asked to stop: it gets an
        /// answer (`ShuttingDown`), but is never run.
        case refused(UnsafeBufferPointer<UInt8>, storage: InputBuffer)
    }

    /// Bytes of an over-long line kept for its record.
    static let overlongPrefixBytes = 256

    private let descriptor: Int32
    private let wake: Int32?
    private let maxLineBytes: Int
    private var storage: InputBuffer
    private var buffer: UnsafeMutablePointer<UInt8> { storage.bytes }
    private var capacity: Int { storage.capacity }
    private var start = 0
    private var end = 0
    private var atEndOfInput = false
    /// Reading stopped on request (SIGINT/SIGTERM), not at end of input.
    private var stopped = false
    /// A socket connection that sends no complete line for this long, with
    /// none of its requests in flight, is closed (nil: never).
    private let idleTimeout: UInt64?
    /// When the last complete line arrived (or reading began).
    private var lastLine = MonotonicClock.now
    /// Whether the connection has requests in flight (set by its input loop).
    var hasRequestsInFlight: () -> Bool = { false }
    /// Counts the bytes read (`run --metrics`), once per read, not per line.
    var bytesRead: Counter?
    /// Reading ended because the connection was idle.
    private(set) var closedIdle = false
    /// How long after a stop request lines already waiting are still read,
    /// to be answered `ShuttingDown` instead of dropped unseen.
    private let refusalWindow: UInt64
    /// Once a stop was requested: until when waiting lines are refused, and
    /// where in the buffer the bytes read since begin.
    private var stopping: (until: UInt64, firstByteAfterStop: Int)?
    /// Lines answered `ShuttingDown`.
    private(set) var refusedCount = 0
    /// At most this many: what a pipe or socket holds, not a whole stream.
    static let maxRefusedLines = 4096
    private let isRegularFile: Bool
    /// A socket client is waiting on the other end: it gets the whole
    /// window to send its last lines (each answered), where a FIFO or pipe
    /// is read only for what is already in it.
    private let isSocket: Bool
    /// Input was still waiting when the refusal window closed.
    private(set) var leftInputUnread = false
    /// An over-long line being skipped to its end.
    private var skipping: Skipping?

    private struct Skipping {
        var byteCount: Int
        var prefix: [UInt8]
        /// Whether any non-blank byte was seen yet (a blank line is never a
        /// request, however long); and whether the first one was `#`.
        var sawText: Bool
        var isComment: Bool
    }

    /// `wake` becomes readable when the host wants reading to stop; lines
    /// already waiting then are still read for `refusalWindow` and refused.
    init(descriptor: Int32, wake: Int32?, maxLineBytes: Int, refusalWindow: Duration = .zero,
         idleTimeout: Duration? = nil) {
        self.descriptor = descriptor
        self.wake = wake
        self.maxLineBytes = maxLineBytes
        self.refusalWindow = refusalWindow.nanoseconds
        var info = stat()
        let type = fstat(descriptor, &info) == 0 ? info.st_mode & S_IFMT : 0
        self.isRegularFile = type == S_IFREG
        self.isSocket = type == S_IFSOCK
        self.idleTimeout = type == S_IFSOCK ? idleTimeout?.nanoseconds : nil
        // One input stream (a file, a pipe, the FIFO) reads in large blocks,
        // a read and a poll per thousands of lines; a connection, one of
        // many, in small ones.
        self.storage = InputBuffer(capacity: maxLineBytes + (type == S_IFSOCK ? 64 * 1024 : 1024 * 1024))
    }

    /// The next line, or nil at the end of input (or when asked to stop).
    /// `beforeBlocking` runs whenever the reader is about to wait for input.
    func next(beforeBlocking: () -> Void) -> Line? {
        while true {
            if let line = nextBufferedLine() { return line }
            if atEndOfInput {
                return finalLine()
            }
            beforeBlocking()
            switch fill() {
            case .data: continue
            case .endOfInput: atEndOfInput = true
            case .stopped:
                atEndOfInput = true
                stopped = true
            }
        }
    }

    private func nextBufferedLine() -> Line? {
        while start < end {
            guard let newline = memchr(buffer + start, 0x0A, end - start) else {
                // No line end yet: past the limit, start (or go on) skipping.
                if skipping != nil || end - start > maxLineBytes + 1 {
                    skip(UnsafeBufferPointer(start: buffer + start, count: end - start))
                    start = end
                }
                return nil
            }
            let lineEnd = buffer.distance(to: newline.assumingMemoryBound(to: UInt8.self))
            let piece = UnsafeBufferPointer(start: buffer + start, count: lineEnd - start)
            start = lineEnd + 1
            if skipping != nil {
                skip(piece)
                if let line = finishSkipping() { return line }
                continue
            }
            // Only a socket has an idle clock: no clock read per line elsewhere.
            if idleTimeout != nil { lastLine = MonotonicClock.now }
            if let line = classify(piece) {
                // Completed by bytes read after the stop: answer, do not run.
                if let stopping, lineEnd >= stopping.firstByteAfterStop, case .text(let bytes, let storage) = line {
                    refusedCount += 1
                    return .refused(bytes, storage: storage)
                }
                return line
            }
        }
        return nil
    }

    /// A complete line (terminator removed): a request, an over-long line,
    /// or nothing (blank or comment).
    private func classify(_ raw: UnsafeBufferPointer<UInt8>) -> Line? {
        // The CR of a CRLF ending is part of the terminator, not the line.
        let count = raw.last == 0x0D ? raw.count - 1 : raw.count
        let line = UnsafeBufferPointer(rebasing: raw[0..<count])
        guard let trimmed = Self.trimmed(line) else { return nil }
        if line.count > maxLineBytes {
            return .overlong(byteCount: line.count, prefix: Array(trimmed.prefix(Self.overlongPrefixBytes)))
        }
        return .text(trimmed, storage: storage)
    }

    private func skip(_ bytes: UnsafeBufferPointer<UInt8>) {
        var state = skipping ?? Skipping(byteCount: 0, prefix: [], sawText: false, isComment: false)
        if !state.sawText, let first = bytes.first(where: { !Self.isSpace($0) }) {
            state.sawText = true
            state.isComment = first == UInt8(ascii: "#")
        }
        if state.sawText && state.prefix.count < Self.overlongPrefixBytes {
            let text = state.prefix.isEmpty ? Array(bytes.drop(while: Self.isSpace)) : Array(bytes)
            state.prefix += text.prefix(Self.overlongPrefixBytes - state.prefix.count)
        }
        state.byteCount += bytes.count
        skipping = state
    }

    private func finishSkipping() -> Line? {
        guard let state = skipping else { return nil }
        skipping = nil
        guard state.sawText, !state.isComment else { return nil }
        return .overlong(byteCount: state.byteCount, prefix: state.prefix)
    }

    /// The last line of an input that does not end in a newline. When
    /// reading was stopped by a signal, an unterminated line may be a
    /// request still being written: it is dropped, not run half-written.
    private func finalLine() -> Line? {
        if stopped || closedIdle {
            if skipping != nil || start < end {
                skipping = nil
                start = end
                // An idle connection's stray bytes are part of its closing log line.
                droppedPartialLine = stopped
            }
            return nil
        }
        if skipping != nil {
            if start < end { skip(UnsafeBufferPointer(start: buffer + start, count: end - start)) }
            start = end
            return finishSkipping()
        }
        guard start < end else { return nil }
        let line = UnsafeBufferPointer(start: buffer + start, count: end - start)
        start = end
        return classify(line)
    }

    /// Set when a stop dropped an unterminated line (the host logs it).
    private(set) var droppedPartialLine = false

    private enum Fill { case data, endOfInput, stopped }

    /// Reads more input.
    private func fill() -> Fill {
        if !isKnownUniquelyReferenced(&storage) {
            // A line handed out earlier is still being processed (its
            // thread stalled and lost the input): leave its bytes alone.
            let fresh = InputBuffer(capacity: storage.capacity)
            if start < end { memcpy(fresh.bytes, buffer + start, end - start) }
            end -= start
            stopping?.firstByteAfterStop -= start
            start = 0
            storage = fresh
        } else if start > 0 {
            if start < end { memmove(buffer, buffer + start, end - start) }
            end -= start
            stopping?.firstByteAfterStop -= start
            start = 0
        }
        while true {
            if let wake {
                var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                // Once stopping, the stop signal stays raised: watch the input only.
                let ready = poll(&fds, stopping == nil ? 2 : 1, pollTimeout())
                if ready < 0 {
                    if errno == EINTR { continue }
                    return .endOfInput
                }
                if ready == 0, stopping == nil, let idleTimeout, MonotonicClock.now &- lastLine >= idleTimeout {
                    // Idle, or trickling bytes that never make a line: a
                    // connection must not hold its slot for nothing.
                    if hasRequestsInFlight() {
                        lastLine = MonotonicClock.now
                        continue
                    }
                    closedIdle = true
                    return .endOfInput
                }
                if fds[1].revents != 0 && stopping == nil {
                    stopping = (MonotonicClock.now + refusalWindow, end)
                    // A file is always readable: what is left of it was never
                    // sent by anyone waiting for an answer.
                    if isRegularFile {
                        var info = stat()
                        leftInputUnread = fstat(descriptor, &info) == 0 && lseek(descriptor, 0, SEEK_CUR) < info.st_size
                        return .stopped
                    }
                    continue
                }
                if let stopping {
                    if fds[0].revents == 0 { return .stopped }
                    if MonotonicClock.now >= stopping.until || refusedCount >= Self.maxRefusedLines {
                        leftInputUnread = true
                        return .stopped
                    }
                }
            }
            let count = read(descriptor, buffer + end, capacity - end)
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return .endOfInput
            }
            if count == 0 { return .endOfInput }
            end += count
            bytesRead?.add(UInt64(count))
            return .data
        }
    }

    /// Milliseconds to wait for input: forever before a stop; after it,
    /// nothing (a pipe), or what is left of the window (a socket).
    private func pollTimeout() -> Int32 {
        guard let stopping else {
            guard let idleTimeout else { return -1 }
            let waited = MonotonicClock.now &- lastLine
            return waited >= idleTimeout ? 0 : Int32(min((idleTimeout - waited) / 1_000_000 + 1, 60_000))
        }
        guard isSocket else { return 0 }
        let now = MonotonicClock.now
        return now >= stopping.until ? 0 : Int32(min((stopping.until - now) / 1_000_000 + 1, 60_000))
    }

    /// Trims ASCII white space; nil for blank lines and `#` comments.
    static func trimmed(_ line: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        var low = 0
        var high = line.count
        while low < high, isSpace(line[low]) { low += 1 }
        while high > low, isSpace(line[high - 1]) { high -= 1 }
        guard low < high, line[low] != UInt8(ascii: "#") else { return nil }
        return UnsafeBufferPointer(rebasing: line[low..<high])
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (byte >= 0x09 && byte <= 0x0D)
    }
}
