#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Splits a byte stream into request lines (SPEC section 3): LF or CRLF,
/// white space trimmed, blank lines and `#` comments skipped. A line longer
/// than the limit is not kept: its bytes are counted and skipped to its end,
/// so one huge line costs no memory and the next line reads normally.
final class LineReader {
    enum Line {
        case text(UnsafeBufferPointer<UInt8>)
        case overlong(byteCount: Int)
    }

    private let descriptor: Int32
    private let wake: Int32?
    private let maxLineBytes: Int
    private let buffer: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var start = 0
    private var end = 0
    private var atEndOfInput = false
    /// Bytes of an over-long line seen so far, while skipping it.
    private var skipping: Int?

    /// `wake` becomes readable when the host wants reading to stop.
    init(descriptor: Int32, wake: Int32?, maxLineBytes: Int) {
        self.descriptor = descriptor
        self.wake = wake
        self.maxLineBytes = maxLineBytes
        self.capacity = maxLineBytes + 64 * 1024
        self.buffer = .allocate(capacity: capacity)
    }

    deinit { buffer.deallocate() }

    /// The next line, or nil at the end of input (or when asked to stop).
    /// `beforeBlocking` runs whenever the reader is about to wait for input.
    func next(beforeBlocking: () -> Void) -> Line? {
        while true {
            if let line = nextBufferedLine() { return line }
            if atEndOfInput {
                return finalLine()
            }
            beforeBlocking()
            guard fill() else {
                atEndOfInput = true
                continue
            }
        }
    }

    private func nextBufferedLine() -> Line? {
        while start < end {
            guard let newline = memchr(buffer + start, 0x0A, end - start) else {
                if let seen = skipping {
                    skipping = seen + (end - start)
                    start = end
                } else if end - start > maxLineBytes {
                    skipping = end - start
                    start = end
                }
                return nil
            }
            let lineEnd = buffer.distance(to: newline.assumingMemoryBound(to: UInt8.self))
            let lineStart = start
            start = lineEnd + 1
            if let seen = skipping {
                skipping = nil
                return .overlong(byteCount: seen + (lineEnd - lineStart))
            }
            if lineEnd - lineStart > maxLineBytes {
                return .overlong(byteCount: lineEnd - lineStart)
            }
            if let line = Self.trimmed(UnsafeBufferPointer(start: buffer + lineStart, count: lineEnd - lineStart)) {
                return .text(line)
            }
        }
        return nil
    }

    /// The last line of an input that does not end in a newline.
    private func finalLine() -> Line? {
        if let seen = skipping {
            skipping = nil
            return .overlong(byteCount: seen + (end - start))
        }
        guard start < end else { return nil }
        let line = UnsafeBufferPointer(start: buffer + start, count: end - start)
        start = end
        if line.count > maxLineBytes { return .overlong(byteCount: line.count) }
        return Self.trimmed(line).map(Line.text) ?? nil
    }

    /// Reads more input; false at end of input or when told to stop.
    private func fill() -> Bool {
        if start > 0 {
            if start < end { memmove(buffer, buffer + start, end - start) }
            end -= start
            start = 0
        }
        while true {
            if let wake {
                var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&fds, 2, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                if fds[1].revents != 0 { return false }
            }
            let count = read(descriptor, buffer + end, capacity - end)
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return false
            }
            if count == 0 { return false }
            end += count
            return true
        }
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
