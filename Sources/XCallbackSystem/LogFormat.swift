import Logging

/// How diagnostics are written to stderr (`--log-format`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's `StreamLogHandler` lines: `TIME LEVEL LABEL: [SOURCE] MESSAGE`.
    case text
    /// One JSON object per line (`JSONLogHandler`).
    case json

    /// A log handler in this format writing to `console`.
    public func handler(label: String, level: Logger.Level, console: DiagnosticConsole) -> any LogHandler {
        switch self {
        case .text:
            var handler = StreamLogHandler(label: label, stream: DiagnosticConsoleStream(console: console))
            handler.logLevel = level
            return handler
        case .json:
            var handler = JSONLogHandler(label: label, console: console)
            handler.logLevel = level
            return handler
        }
    }

    /// The summary line of `counts`, newline included. Text:
    /// `xcallback: processed 12, succeeded 9, failed 2 (crashed 1, timed out 0), cancelled 1`.
    /// JSON: a `notice` log object with the same message and a `summary`
    /// object of the numbers; `final` is false for a SIGUSR1 report.
    public func summaryLine(_ counts: OutcomeCounts, final: Bool, label: String = "xcallback") -> String {
        switch self {
        case .text:
            return "\(label): \(counts.summary)\n"
        case .json:
            var line = JSONLogLine(level: Logger.Level.notice.rawValue, label: label, message: counts.summary)
            line.append("metadata") { $0.append(contentsOf: "{}".utf8) }
            line.append("summary") { output in
                let fields: [(String, String)] = [
                    ("processed", String(counts.processed)), ("succeeded", String(counts.succeeded)),
                    ("failed", String(counts.failed)), ("crashed", String(counts.crashed)),
                    ("timedOut", String(counts.timedOut)), ("cancelled", String(counts.cancelled)),
                    ("final", String(final)),
                ]
                output.append(UInt8(ascii: "{"))
                for (index, (name, value)) in fields.enumerated() {
                    if index > 0 { output.append(UInt8(ascii: ",")) }
                    JSON.appendString(name, to: &output)
                    output.append(UInt8(ascii: ":"))
                    output.append(contentsOf: value.utf8)
                }
                output.append(UInt8(ascii: "}"))
            }
            return line.finished()
        }
    }
}
