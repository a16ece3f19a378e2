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
/// general path writes it from `RequestFields`, a lane from the bytes of its
/// `NativeRequest`, and both read it through `read(_:into:)`.
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

/// A request a host lane filled in place, as a frame's content: `urlCount`
/// bytes of URL, and no route arguments (a lane's routes are all literals).
public struct LaneRequestContent: RequestFrameContent {
    public let request: NativeRequest
    public let urlCount: Int

    public init(_ request: NativeRequest, urlCount: Int) {
        self.request = request
        self.urlCount = urlCount
    }

    public func writeURL(_ writer: inout WireWriter) { writer.bytes(request.url, count: urlCount) }
    public func writeScheme(_ writer: inout WireWriter) { writer.bytes(request.scheme, count: strlen(request.scheme)) }
    public var hasSource: Bool { request.source != nil }
    public func writeSource(_ writer: inout WireWriter) {
        if let source = request.source { writer.bytes(source, count: strlen(source)) }
    }
    public func writeParameters(_ writer: inout WireWriter) {
        let count = request.parameterCount
        writer.u32(UInt32(count))
        for index in 0..<count {
            // In range by construction: both exist for every index below the count.
            let name = request.parameterName(at: index)!
            let (value, valueCount) = request.parameterValue(at: index)!
            writer.bytes(name, count: strlen(name))
            writer.bytes(value, count: valueCount)
        }
    }
    public func writeArguments(_ writer: inout WireWriter) { writer.u32(0) }
    public var requestID: UInt64 { request.id }
    public var attempt: UInt32 { request.attempt }
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
