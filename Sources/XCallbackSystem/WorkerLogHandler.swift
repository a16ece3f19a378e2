import Logging

/// How a worker (and the zygote) logs: `LEVEL: MESSAGE` on its stderr, a
/// pipe the host relays (`WorkerOutputRelay`), which logs each line in the
/// host's own format and at that level, tagged with the plug-in's name. A
/// worker never writes to the host's stderr itself.
public struct WorkerLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let console: DiagnosticConsole

    public init(level: Logger.Level, console: DiagnosticConsole) {
        logLevel = level
        self.console = console
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        let details = merged.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        console.write("\(event.level.rawValue): \(event.message)\(details)\n")
    }

    /// The level a relayed line names at its start, and the rest of it; a
    /// line without one (a plug-in's own print) is a warning.
    public static func level(of line: Substring) -> (Logger.Level, Substring) {
        guard let colon = line.firstIndex(of: ":"), line.index(after: colon) < line.endIndex,
              line[line.index(after: colon)] == " ",
              let level = Logger.Level(rawValue: String(line[..<colon]))
        else { return (.warning, line) }
        return (level, line[line.index(colon, offsetBy: 2)...])
    }
}
