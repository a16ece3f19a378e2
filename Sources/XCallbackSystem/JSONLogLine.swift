/// One JSON diagnostics line: `time`, `level`, `label` and `message` first,
/// then whatever fields the caller appends. Log lines and the summary line
/// share it, so one reader parses both.
public struct JSONLogLine {
    private var bytes: [UInt8] = []

    public init(level: String, label: String, message: String, time: String = UTCTimestamp.now()) {
        bytes.reserveCapacity(256)
        bytes.append(contentsOf: #"{"time":"#.utf8)
        JSON.appendString(time, to: &bytes)
        bytes.append(contentsOf: #","level":"#.utf8)
        JSON.appendString(level, to: &bytes)
        bytes.append(contentsOf: #","label":"#.utf8)
        JSON.appendString(label, to: &bytes)
        bytes.append(contentsOf: #","message":"#.utf8)
        JSON.appendString(message, to: &bytes)
    }

    /// Appends `"name":` and the value `body` writes.
    public mutating func append(_ name: String, _ body: (inout [UInt8]) -> Void) {
        bytes.append(UInt8(ascii: ","))
        JSON.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        body(&bytes)
    }

    /// The object, closed, with its newline.
    public func finished() -> String {
        String(decoding: bytes + Array("}\n".utf8), as: UTF8.self)
    }
}
