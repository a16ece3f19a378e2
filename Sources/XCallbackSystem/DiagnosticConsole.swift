
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// stderr as the host's diagnostics share it: log lines, the summary line
/// and the progress line. Each line goes out in one write, and a progress
/// line on screen (written without a newline, rewritten in place) is erased
/// before any other line, so the two never garble each other.
public final class DiagnosticConsole: Sendable {
    private let descriptor: Int32
    /// Whether a status line is on screen, waiting to be rewritten or erased.
    private let statusShown = Lock(false)
    /// Whether the records' writer is on the same pipe (`2>&1`): each line
    /// then takes its turn with the records' writes (`SharedPipe`).
    private let takesTurns: Bool

    /// Back to the start of the line, and erase to its end.
    private static let eraseLine = "\r\u{1B}[K"

    /// A console on `descriptor`; `sharesPipeWithRecords` says whether the
    /// records go to the same pipe (by default: whether stdout is it).
    public init(descriptor: Int32 = 2, sharesPipeWithRecords: Bool? = nil) {
        self.descriptor = descriptor
        takesTurns = sharesPipeWithRecords ?? SharedPipe.isSame(descriptor, as: 1)
    }

    private func writeFully(_ descriptor: Int32, _ text: String) {
        if takesTurns {
            SharedPipe.turns.withLock { _ in writeAll(descriptor, text) }
        } else {
            writeAll(descriptor, text)
        }
    }

    /// Writes `text` (whole lines, newlines included), erasing a status
    /// line first.
    public func write(_ text: String) {
        statusShown.withLock { shown in
            if shown {
                shown = false
                writeFully(descriptor, Self.eraseLine + text)
            } else {
                writeFully(descriptor, text)
            }
        }
    }

    /// Shows `text` as the status line, in place of the previous one. For
    /// a terminal only: the line has no newline.
    public func showStatus(_ text: String) {
        statusShown.withLock { shown in
            shown = true
            writeFully(descriptor, Self.eraseLine + text)
        }
    }

    /// Erases the status line, if one is on screen.
    public func clearStatus() {
        statusShown.withLock { shown in
            guard shown else { return }
            shown = false
            writeFully(descriptor, Self.eraseLine)
        }
    }
}

/// Writes all of `text`, waiting for room if stderr was made non-blocking;
/// on error (stderr gone) the rest is dropped: diagnostics are never fatal.
private func writeAll(_ descriptor: Int32, _ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    BufferedWriter.waitUntilWritable(descriptor)
                    continue
                }
                return
            }
            offset += written
        }
    }
}

/// A `TextOutputStream` onto the console, for `StreamLogHandler`: its text
/// lines stay exactly what swift-log makes them.
public struct DiagnosticConsoleStream: TextOutputStream, Sendable {
    public let console: DiagnosticConsole

    public init(console: DiagnosticConsole) {
        self.console = console
    }

    public mutating func write(_ string: String) {
        console.write(string)
    }
}
