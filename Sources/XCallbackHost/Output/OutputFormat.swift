import XCallbackSystem
import XCallbackURL

/// How outcome records are written (`--output`).
public enum OutputFormat: String, Sendable, CaseIterable {
    /// One URL per line: the callback with the outcome appended, or
    /// `success?…`, `error?…`, `cancel` when the request gave none.
    case url
    /// One JSON object per line: input, outcome, params, callback.
    case jsonl

    /// Appends one record and its newline to `output`.
    public func write(_ record: OutcomeRecord, to output: inout [UInt8]) {
        switch self {
        case .url:
            record.outcome.appendLine(callback: record.callback, to: &output)
        case .jsonl:
            output.append(contentsOf: #"{"input":"#.utf8)
            JSON.appendString(record.input, to: &output)
            output.append(contentsOf: #","outcome":"#.utf8)
            JSON.appendString(record.outcome.kind.rawValue, to: &output)
            output.append(contentsOf: #","params":{"#.utf8)
            var seen = Set<String>()
            for parameter in record.outcome.parameters where seen.insert(parameter.name).inserted {
                if seen.count > 1 { output.append(UInt8(ascii: ",")) }
                JSON.appendString(parameter.name, to: &output)
                output.append(UInt8(ascii: ":"))
                JSON.appendString(parameter.value, to: &output)
            }
            output.append(contentsOf: #"},"callback":"#.utf8)
            if let callback = record.resolvedCallback {
                JSON.appendString(callback, to: &output)
            } else {
                output.append(contentsOf: "null".utf8)
            }
            output.append(UInt8(ascii: "}"))
        }
        output.append(UInt8(ascii: "\n"))
    }
}
