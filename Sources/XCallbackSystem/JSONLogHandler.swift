import Logging

/// `--log-format json`: one JSON object per log line,
/// `{"time":"2025-06-01T12:34:56.789Z","level":"warning","label":"xcallback",
/// "message":"…","metadata":{…},"source":"XCallbackHost"}`. `time` is UTC;
/// metadata values are strings, arrays and objects, as the logger gave them.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let console: DiagnosticConsole

    public init(label: String, console: DiagnosticConsole,
                metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.label = label
        self.console = console
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // Later sources win: the handler's own, the provider's, the call's.
        var merged = metadata
        if let provided = metadataProvider?.get() {
            merged.merge(provided) { _, new in new }
        }
        if let explicit = event.metadata {
            merged.merge(explicit) { _, new in new }
        }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = JSONLogLine(level: event.level.rawValue, label: label, message: event.message.description)
        line.append("metadata") { Self.appendObject(merged, to: &$0) }
        line.append("source") { JSON.appendString(event.source, to: &$0) }
        console.write(line.finished())
    }

    private static func appendObject(_ metadata: Logger.Metadata, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        // Sorted keys: the same metadata always reads the same.
        for (index, key) in metadata.keys.sorted().enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSON.appendString(key, to: &output)
            output.append(UInt8(ascii: ":"))
            appendValue(metadata[key]!, to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    private static func appendValue(_ value: Logger.Metadata.Value, to output: inout [UInt8]) {
        switch value {
        case .string(let text):
            JSON.appendString(text, to: &output)
        case .stringConvertible(let convertible):
            JSON.appendString(convertible.description, to: &output)
        case .dictionary(let dictionary):
            appendObject(dictionary, to: &output)
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                appendValue(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        }
    }
}
