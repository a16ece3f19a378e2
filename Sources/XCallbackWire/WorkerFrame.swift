import XCallbackBridge
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The messages between the host and a worker process, over a socketpair.
///
/// Each frame is a 4-byte little-endian payload length, a 1-byte kind, and
/// the payload; strings are a 4-byte length and UTF-8 bytes. Requests are
/// pipelined: the host sends as many as it has without waiting, and the
/// worker answers in completion order, each answer naming its request id.
package enum WorkerFrame: Equatable, Sendable {
    /// Host → worker, first frame: the protocol version the host speaks.
    /// `taken`: routes other plug-ins own (pattern, owner), so the worker's
    /// registration refuses a conflicting one as an in-process load would.
    case hello(version: UInt32, taken: [QueryParameter])
    /// Worker → host: the plug-in loaded; its identity and routes in
    /// registration order (a route's index is its handler index).
    case ready(version: UInt32, info: WireInfo, routes: [String])
    /// Worker → host: the plug-in could not be loaded.
    case loadFailed(message: String)
    /// Host → worker: run handler `handler` for request `id`.
    case request(id: UInt64, handler: UInt32, fields: RequestFields)
    /// Worker → host: request `id` ended.
    case result(id: UInt64, result: HandlerResult)
    /// Worker → host: the handler of `id` returned without completing yet
    /// (it will complete later, from another thread). A request whose
    /// handler never returned, at its deadline, means a hung worker.
    case returned(id: UInt64)
    /// Host → worker: finish and exit.
    case shutdown

    /// 3: a request frame carries the request's attempt after its id.
    package static let protocolVersion: UInt32 = 3
    /// Frames larger than this are a protocol error, not an allocation.
    package static let maxPayload = 16 * 1024 * 1024

    package struct WireInfo: Equatable, Sendable {
        package var name: String
        package var version: String
        package var summary: String
        package var abiMajor: UInt16
        package var abiMinor: UInt16

        package init(name: String, version: String, summary: String, abiMajor: UInt16, abiMinor: UInt16) {
            self.name = name
            self.version = version
            self.summary = summary
            self.abiMajor = abiMajor
            self.abiMinor = abiMinor
        }
    }

    package enum Kind: UInt8 {
        case hello = 1, ready, loadFailed, request, result, returned, shutdown
    }

    // MARK: encoding

    package func encode(into output: inout [UInt8]) {
        Self.appendFrame(kind, into: &output) { writer in
            switch self {
            case .hello(let version, let taken):
                writer.u32(version)
                writer.pairs(taken)
            case .ready(let version, let info, let routes):
                writer.u32(version)
                writer.string(info.name)
                writer.string(info.version)
                writer.string(info.summary)
                writer.u16(info.abiMajor)
                writer.u16(info.abiMinor)
                writer.u32(UInt32(routes.count))
                routes.forEach { writer.string($0) }
            case .loadFailed(let message):
                writer.string(message)
            case .request(let id, let handler, let fields):
                writer.u64(id)
                writer.u32(handler)
                writer.string(fields.url)
                writer.string(fields.scheme)
                writer.u8(fields.source == nil ? 0 : 1)
                writer.string(fields.source ?? "")
                writer.pairs(fields.parameters)
                writer.pairs(fields.arguments)
                writer.u64(fields.id)
                writer.u32(fields.attempt)
            case .result(let id, let result):
                writer.u64(id)
                switch result {
                case .declined:
                    writer.u8(3)
                    writer.pairs([])
                case .outcome(let outcome):
                    switch outcome.kind {
                    case .success: writer.u8(0)
                    case .error: writer.u8(1)
                    case .cancel: writer.u8(2)
                    }
                    writer.pairs(outcome.parameters)
                }
            case .returned(let id):
                writer.u64(id)
            case .shutdown:
                break
        }
        }
    }

    private var kind: Kind {
        switch self {
        case .hello: .hello
        case .ready: .ready
        case .loadFailed: .loadFailed
        case .request: .request
        case .result: .result
        case .returned: .returned
        case .shutdown: .shutdown
        }
    }

    /// Appends one frame: its payload's length, `kind`, and the payload
    /// `fill` writes.
    package static func appendFrame(_ kind: Kind, into output: inout [UInt8], _ fill: (inout WireWriter) -> Void) {
        let start = output.count
        var writer = WireWriter(output: [])
        swap(&writer.output, &output)
        defer { swap(&writer.output, &output) }
        writer.output.append(contentsOf: [0, 0, 0, 0, kind.rawValue])
        fill(&writer)
        let length = UInt32(writer.output.count - start - 5)
        for index in 0..<4 {
            writer.output[start + index] = UInt8(truncatingIfNeeded: length >> UInt32(8 * index))
        }
    }

    package static let requestKind = Kind.request.rawValue
    package static let resultKind = Kind.result.rawValue
    package static let returnedKind = Kind.returned.rawValue

    // MARK: decoding

    /// Decodes one frame's kind and payload; nil when malformed.
    package static func decode(kind rawKind: UInt8, payload: UnsafeRawBufferPointer) -> WorkerFrame? {
        guard let kind = Kind(rawValue: rawKind) else { return nil }
        var reader = WireReader(bytes: payload)
        let frame: WorkerFrame?
        switch kind {
        case .hello:
            guard let version = reader.u32(), let taken = reader.pairs() else { return nil }
            frame = .hello(version: version, taken: taken)
        case .ready:
            guard let version = reader.u32(), let name = reader.string(), let pluginVersion = reader.string(),
                  let summary = reader.string(), let major = reader.u16(), let minor = reader.u16(),
                  let count = reader.u32(), count <= 1_000_000 else { return nil }
            var routes: [String] = []
            for _ in 0..<count {
                guard let route = reader.string() else { return nil }
                routes.append(route)
            }
            frame = .ready(version: version, info: WireInfo(name: name, version: pluginVersion, summary: summary,
                                                            abiMajor: major, abiMinor: minor), routes: routes)
        case .loadFailed:
            frame = reader.string().map { .loadFailed(message: $0) }
        case .request:
            guard let id = reader.u64(), let handler = reader.u32(), let url = reader.string(),
                  let scheme = reader.string(), let hasSource = reader.u8(), let source = reader.string(),
                  let parameters = reader.pairs(), let arguments = reader.pairs(), let requestID = reader.u64(),
                  let attempt = reader.u32()
            else { return nil }
            frame = .request(id: id, handler: handler, fields: RequestFields(
                url: url, scheme: scheme, source: hasSource == 0 ? nil : source,
                parameters: parameters, arguments: arguments, id: requestID, attempt: attempt))
        case .result:
            guard let id = reader.u64(), let code = reader.u8(), let parameters = reader.pairs() else { return nil }
            switch code {
            case 0: frame = .result(id: id, result: .outcome(Outcome(kind: .success, parameters: parameters)))
            case 1: frame = .result(id: id, result: .outcome(Outcome(kind: .error, parameters: parameters)))
            case 2: frame = .result(id: id, result: .outcome(Outcome(kind: .cancel, parameters: parameters)))
            case 3: frame = .result(id: id, result: .declined)
            default: return nil
            }
        case .returned:
            frame = reader.u64().map { .returned(id: $0) }
        case .shutdown:
            frame = .shutdown
        }
        // Trailing bytes mean the two sides disagree on the format.
        return reader.isAtEnd ? frame : nil
    }
}

/// Appends little-endian integers and length-prefixed strings.
package struct WireWriter {
    package var output: [UInt8]

    package mutating func u8(_ value: UInt8) { output.append(value) }
    package mutating func u16(_ value: UInt16) {
        output.append(UInt8(truncatingIfNeeded: value))
        output.append(UInt8(truncatingIfNeeded: value >> 8))
    }
    package mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { output.append(contentsOf: $0) }
    }
    package mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { output.append(contentsOf: $0) }
    }
    package mutating func string(_ text: String) {
        u32(UInt32(text.utf8.count))
        output.append(contentsOf: text.utf8)
    }
    /// As `string`, for `count` bytes at `text`.
    package mutating func bytes(_ text: UnsafePointer<CChar>, count: Int) {
        u32(UInt32(count))
        text.withMemoryRebound(to: UInt8.self, capacity: count) {
            output.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
        }
    }
    package mutating func pairs(_ items: [QueryParameter]) {
        u32(UInt32(items.count))
        for item in items {
            string(item.name)
            string(item.value)
        }
    }
}

/// Reads what WireWriter wrote; every read is bounds-checked.
package struct WireReader {
    package let bytes: UnsafeRawBufferPointer
    package var offset = 0

    package var isAtEnd: Bool { offset == bytes.count }

    package mutating func u8() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }
    package mutating func u16() -> UInt16? { integer(2).map { UInt16(truncatingIfNeeded: $0) } }

    package mutating func u32() -> UInt32? {
        guard bytes.count - offset >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    package mutating func u64() -> UInt64? {
        guard bytes.count - offset >= 8 else { return nil }
        defer { offset += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    private mutating func integer(_ size: Int) -> UInt64? {
        guard bytes.count - offset >= size else { return nil }
        var value: UInt64 = 0
        for index in 0..<size { value |= UInt64(bytes[offset + index]) << UInt64(8 * index) }
        offset += size
        return value
    }

    /// A string's place in the payload, without reading it.
    package mutating func span() -> (start: Int, count: Int)? {
        guard let length = u32().map(Int.init), bytes.count - offset >= length else { return nil }
        defer { offset += length }
        return (offset, length)
    }

    package mutating func string() -> String? {
        guard let length = u32().map(Int.init), bytes.count - offset >= length else { return nil }
        defer { offset += length }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
    }

    package mutating func pairs() -> [QueryParameter]? {
        guard let count = u32(), Int(count) <= (bytes.count - offset) / 8 else { return nil }
        var items: [QueryParameter] = []
        items.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let name = string(), let value = string() else { return nil }
            items.append(QueryParameter(name: name, value: value))
        }
        return items
    }
}
