import XCallbackBridge
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `request` frame, host → worker: run handler `handler` for the
/// request the host numbers `id`.
///
/// Payload: `id` u64, `handler` u32, url, scheme, a source flag u8 and the
/// source (empty when the flag is 0), parameters and route arguments (each
/// a u32 count and name/value strings), the request's own id u64 and its
/// attempt u32. This type is the only code that knows that order: the
/// general path writes it from `RequestFields`, a lane from its line's bytes
/// (`writeLine`), and both read it through `read(_:into:)`.
public enum RequestFrame {
    public static func write(id: UInt64, handler: UInt32, _ content: some RequestFrameContent,
                              into output: inout [UInt8]) {
        WorkerFrame.appendFrame(.request, into: &output) { writer in
            writer.u64(id)
            writer.u32(handler)
            content.writeURL(&writer)
            content.writeScheme(&writer)
            if content.hasSource {
                writer.u8(1)
                content.writeSource(&writer)
            } else {
                writer.u8(0)
                writer.u32(0)
            }
            content.writeParameters(&writer)
            content.writeArguments(&writer)
            writer.u64(content.requestID)
            writer.u32(content.attempt)
        }
    }

    /// Reads a payload field by field into `builder`; the frame's id and
    /// handler, or nil when the payload is malformed (what `builder` was
    /// given before then is to be thrown away).
    public static func read(_ payload: UnsafeRawBufferPointer, into builder: inout some RequestFrameBuilder)
        -> (id: UInt64, handler: UInt32)? {
        var reader = WireReader(bytes: payload)
        guard let id = reader.u64(), let handler = reader.u32(), let url = reader.span(), let scheme = reader.span(),
              let hasSource = reader.u8(), let source = reader.span()
        else { return nil }
        builder.begin(byteCount: payload.count)
        builder.url(payload.slice(url))
        builder.scheme(payload.slice(scheme))
        if hasSource != 0 { builder.source(payload.slice(source)) }
        guard reader.eachPair({ builder.parameter(name: payload.slice($0), value: payload.slice($1)) }),
              reader.eachPair({ builder.argument(name: payload.slice($0), value: payload.slice($1)) }),
              let requestID = reader.u64(), let attempt = reader.u32(), reader.isAtEnd
        else { return nil }
        builder.finish(requestID: requestID, attempt: attempt)
        return (id, handler)
    }

    /// A payload's handler, without reading the rest.
    public static func handler(of payload: UnsafeRawBufferPointer) -> UInt32? {
        var reader = WireReader(bytes: payload)
        guard reader.u64() != nil else { return nil }
        return reader.u32()
    }
}

/// What a `request` frame is written from; each field is written with the
/// wire's string and pair encodings (`WireWriter`).
public protocol RequestFrameContent {
    func writeURL(_ writer: inout WireWriter)
    func writeScheme(_ writer: inout WireWriter)
    var hasSource: Bool { get }
    func writeSource(_ writer: inout WireWriter)
    func writeParameters(_ writer: inout WireWriter)
    func writeArguments(_ writer: inout WireWriter)
    var requestID: UInt64 { get }
    var attempt: UInt32 { get }
}

/// What a `request` frame is read into: each field's bytes, in the payload
/// and valid only during the call.
public protocol RequestFrameBuilder {
    mutating func begin(byteCount: Int)
    mutating func url(_ bytes: UnsafeRawBufferPointer)
    mutating func scheme(_ bytes: UnsafeRawBufferPointer)
    mutating func source(_ bytes: UnsafeRawBufferPointer)
    mutating func parameter(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    mutating func argument(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    mutating func finish(requestID: UInt64, attempt: UInt32)
}

// MARK: the general path's shape

extension RequestFields: RequestFrameContent {
    public func writeURL(_ writer: inout WireWriter) { writer.string(url) }
    public func writeScheme(_ writer: inout WireWriter) { writer.string(scheme) }
    public var hasSource: Bool { source != nil }
    public func writeSource(_ writer: inout WireWriter) { writer.string(source ?? "") }
    public func writeParameters(_ writer: inout WireWriter) { writer.pairs(parameters) }
    public func writeArguments(_ writer: inout WireWriter) { writer.pairs(arguments) }
    public var requestID: UInt64 { id }
}

/// Reads a `request` frame into `RequestFields` (a worker's general path,
/// and `WorkerFrame.decode`).
public struct RequestFieldsBuilder: RequestFrameBuilder {
    public var fields = RequestFields(url: "", scheme: "", source: nil, parameters: [], arguments: [])

    public init() {}

    public mutating func begin(byteCount: Int) {}
    public mutating func url(_ bytes: UnsafeRawBufferPointer) { fields.url = Self.text(bytes) }
    public mutating func scheme(_ bytes: UnsafeRawBufferPointer) { fields.scheme = Self.text(bytes) }
    public mutating func source(_ bytes: UnsafeRawBufferPointer) { fields.source = Self.text(bytes) }
    public mutating func parameter(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        fields.parameters.append(QueryParameter(name: Self.text(name), value: Self.text(value)))
    }
    public mutating func argument(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        fields.arguments.append(QueryParameter(name: Self.text(name), value: Self.text(value)))
    }
    public mutating func finish(requestID: UInt64, attempt: UInt32) {
        fields.id = requestID
        fields.attempt = attempt
    }

    private static func text(_ bytes: UnsafeRawBufferPointer) -> String { String(decoding: bytes, as: UTF8.self) }
}

// MARK: a lane's shape

extension RequestFrame {
    /// Writes the frame of a line a host lane parsed (`parsed`), decoding
    /// each value from the line straight into the frame: the bytes `write`
    /// makes from the same line's `RequestFields`. A lane's routes are all
    /// literals, so there are no route arguments; the attempt is the first.
    /// `requestID` is asked for only once every value decoded. Returns
    /// false, with `output` as it was, when a value does not decode (the
    /// general path then says why). `parsed` is read in place.
    public static func writeLine(id: UInt64, handler: UInt32, line: UnsafeBufferPointer<UInt8>,
                                 parsed: UnsafePointer<RequestLine>, requestID: () -> UInt64,
                                 into output: inout [UInt8]) -> Bool {
        guard let base = line.baseAddress else { return false }
        // Room for the fixed fields, the URL, the scheme, the source and
        // the parameters (together no longer than the line, each with its
        // length), and for the decoder's whole-word copies past the end of
        // a value (at most the rest of the line). Taken uninitialized, and
        // only what is written counts: zeroing it, then cutting the rest
        // off, cost more than writing the frame.
        let room = 64 + 8 * parsed.pointee.parameters.count + 5 * line.count
        var written = false
        output.append(addingCapacity: room) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                initialized = write(into: buffer.baseAddress!) ?? 0
                written = initialized > 0
            }
        }
        return written

        func write(into frame: UnsafeMutablePointer<UInt8>) -> Int? {
            var cursor = WorkerFrame.headerSize
            func integer<T: FixedWidthInteger>(_ value: T) {
                UnsafeMutableRawPointer(frame + cursor).storeBytes(of: value.littleEndian, as: T.self)
                cursor += MemoryLayout<T>.size
            }
            func bytes(from start: Int, count: Int) {
                integer(UInt32(truncatingIfNeeded: count))
                (frame + cursor).update(from: base + start, count: count)
                cursor += count
            }
            func decoded(_ span: RequestLine.Span) -> Bool {
                let length = cursor
                cursor += 4
                guard let count = RequestLine.decodeValue(span, in: line, into: frame + cursor) else { return false }
                UnsafeMutableRawPointer(frame + length).storeBytes(of: UInt32(truncatingIfNeeded: count).littleEndian,
                                                                   as: UInt32.self)
                cursor += count
                return true
            }
            integer(id)
            integer(handler)
            bytes(from: 0, count: line.count)
            bytes(from: parsed.pointee.scheme.start, count: parsed.pointee.scheme.count)
            for index in parsed.pointee.scheme.start..<parsed.pointee.scheme.end {
                let byte = base[index]
                frame[cursor - parsed.pointee.scheme.end + index] = byte.asciiLowercased
            }
            if let source = parsed.pointee.source {
                integer(UInt8(1))
                guard decoded(source) else { return nil }
            } else {
                integer(UInt8(0))
                integer(UInt32(0))
            }
            integer(UInt32(truncatingIfNeeded: parsed.pointee.parameters.count))
            for index in 0..<parsed.pointee.parameters.count {
                let parameter = parsed.pointee.parameters[index]
                bytes(from: parameter.name.start, count: parameter.name.count)
                guard decoded(parameter.value) else { return nil }
            }
            integer(UInt32(0))
            integer(requestID())
            integer(UInt32(1))
            UnsafeMutableRawPointer(frame).storeBytes(of: UInt32(truncatingIfNeeded: cursor - WorkerFrame.headerSize).littleEndian, as: UInt32.self)
            frame[4] = WorkerFrame.requestKind
            return cursor
        }
    }

    /// The URL of a whole `request` frame, header included (a lane's slot
    /// keeps the frame, not the line), or nil when it is not one.
    public static func url(ofFrame frame: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard frame.count >= WorkerFrame.headerSize, frame[4] == WorkerFrame.requestKind else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: frame[WorkerFrame.headerSize...])
        var reader = WireReader(bytes: payload)
        guard reader.u64() != nil, reader.u32() != nil, let url = reader.span() else { return nil }
        return payload.slice(url)
    }
}

/// Reads a `request` frame into a worker lane's `NativeRequest`, in place,
/// for the route `route`.
public struct NativeRequestFiller: RequestFrameBuilder {
    public let request: NativeRequest
    public let route: String

    public init(_ request: NativeRequest, route: String) {
        self.request = request
        self.route = route
    }

    public func begin(byteCount: Int) { request.beginFill(byteCount: byteCount, route: route) }
    public func url(_ bytes: UnsafeRawBufferPointer) { request.addURL(bytes) }
    public func scheme(_ bytes: UnsafeRawBufferPointer) { request.addScheme(bytes) }
    public func source(_ bytes: UnsafeRawBufferPointer) { request.addSource(bytes) }
    public func parameter(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        request.addParameter(name: name, value: value)
    }
    public func argument(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        request.addArgument(name: name, value: value)
    }
    public func finish(requestID: UInt64, attempt: UInt32) { request.assign(id: requestID, attempt: attempt) }
}
