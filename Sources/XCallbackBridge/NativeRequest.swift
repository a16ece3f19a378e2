import CXCallback
import XCallbackURL

/// A request in the memory layout the C accessors read: every string
/// NUL-terminated in one allocation, so an accessor is an offset lookup and
/// the returned pointers stay valid for the request's whole life.
/// The `xcallback_request *` a plug-in sees is this object's address.
///
/// The fast lane refills one of these for request after request (see
/// `FastLane`): its storage and offset arrays keep their capacity, so a
/// request that is answered before its handler returns allocates nothing.
public final class NativeRequest: @unchecked Sendable {
    private struct Parameter {
        var name: Int
        var value: Int
        var valueLength: Int
    }

    // Written only while no handler holds the request (built, or refilled by
    // the one thread that owns its lane), read by every accessor call: the
    // runtime's exclusivity check costs a thread-local lookup per access,
    // so it is off for these.
    @exclusivity(unchecked) private var storage: UnsafeMutablePointer<CChar>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var schemeOffset = 0
    @exclusivity(unchecked) private var sourceOffset: Int?
    @exclusivity(unchecked) private var routeOffset = 0
    @exclusivity(unchecked) private var parameterOffsets: [Parameter] = []
    @exclusivity(unchecked) private var argumentOffsets: [Parameter] = []
    /// The fields it was built from; nil for a request the fast lane filled
    /// (bound functions, which read them, never take that lane).
    @exclusivity(unchecked) public private(set) var fields: RequestFields?
    /// The host's number for the request (`request_id`).
    @exclusivity(unchecked) public private(set) var id: UInt64 = 0
    /// Which attempt at running the request this is (`request_attempt`).
    @exclusivity(unchecked) public private(set) var attempt: UInt32 = 1
    /// The pattern of the route that matched, as registered.
    @exclusivity(unchecked) public private(set) var routeText: String
    /// Where the next part goes while filling from bytes.
    @exclusivity(unchecked) private var fillCursor = 0

    /// An empty request for the fast lane to fill.
    public init() {
        capacity = 1024
        storage = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        routeText = ""
        parameterOffsets.reserveCapacity(16)
    }

    /// `route` is the pattern of the route that matched, as registered.
    public convenience init(_ fields: RequestFields, route: String) {
        self.init(capacity: 0)
        refill(fields, route: route)
    }

    private init(capacity: Int) {
        self.capacity = capacity
        storage = UnsafeMutablePointer<CChar>.allocate(capacity: max(capacity, 1))
        routeText = ""
    }

    /// Refills this request from `fields`, keeping its storage when it is
    /// big enough, part by part as a request frame fills it (`beginFill`).
    public func refill(_ fields: RequestFields, route: String) {
        var size = fields.url.utf8.count + fields.scheme.utf8.count + 2 + (fields.source?.utf8.count ?? 0) + 1
        for item in fields.parameters { size += item.name.utf8.count + item.value.utf8.count + 2 }
        for item in fields.arguments { size += item.name.utf8.count + item.value.utf8.count + 2 }
        beginFill(byteCount: size, route: route)
        Self.withBytes(fields.url) { addURL($0) }
        Self.withBytes(fields.scheme) { addScheme($0) }
        if let source = fields.source { Self.withBytes(source) { addSource($0) } }
        parameterOffsets.reserveCapacity(fields.parameters.count)
        for item in fields.parameters {
            Self.withBytes(item.name) { name in Self.withBytes(item.value) { addParameter(name: name, value: $0) } }
        }
        for item in fields.arguments {
            Self.withBytes(item.name) { name in Self.withBytes(item.value) { addArgument(name: name, value: $0) } }
        }
        assign(id: fields.id, attempt: fields.attempt)
        // Kept for bound functions, which take their arguments as fields.
        self.fields = fields
    }

    private static func withBytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
        var text = text
        text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// Refills this request from a line the fast lane parsed: the URL as
    /// read, the lowercased scheme, `x-source` and every parameter decoded.
    /// A route the lane takes is all literals, so there are no arguments.
    /// Returns false, leaving it unusable until the next fill, when a value
    /// does not decode (the general path then reports why). `parsed` is
    /// read in place (`FastLane.parsedLine`).
    public func fill(line: UnsafeBufferPointer<UInt8>, parsed: UnsafePointer<RequestLine>, route: String,
                     routeBytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Room for every part, and for the decoder's whole-word copies past
        // the end of the value it writes (at most the rest of the line).
        let needed = 4 * line.count + routeBytes.count + 64
        if needed > capacity {
            storage.deallocate()
            capacity = max(needed, capacity * 2)
            storage = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        }
        // Only a request built from fields has them; clearing nil costs
        // a call, and this runs for every line.
        if case .some = fields { fields = nil }
        argumentOffsets.removeAllKeepingStorage()
        parameterOffsets.removeAllKeepingStorage()
        let bytes = UnsafeMutableRawPointer(storage).assumingMemoryBound(to: UInt8.self)
        guard let base = line.baseAddress else { return false }
        var cursor = 0
        bytes.update(from: base, count: line.count)
        bytes[line.count] = 0
        cursor = line.count + 1
        schemeOffset = cursor
        for index in parsed.pointee.scheme.start..<parsed.pointee.scheme.end {
            let byte = base[index]
            bytes[cursor] = byte.asciiLowercased
            cursor += 1
        }
        bytes[cursor] = 0
        cursor += 1
        routeOffset = cursor
        if let routeBase = routeBytes.baseAddress { (bytes + cursor).update(from: routeBase, count: routeBytes.count) }
        cursor += routeBytes.count
        bytes[cursor] = 0
        cursor += 1
        sourceOffset = nil
        if let source = parsed.pointee.source {
            guard let count = RequestLine.decodeValue(source, in: line, into: bytes + cursor) else { return false }
            sourceOffset = cursor
            cursor += count
            bytes[cursor] = 0
            cursor += 1
        }
        for index in 0..<parsed.pointee.parameters.count {
            let parameter = parsed.pointee.parameters[index]
            let name = cursor
            (bytes + cursor).update(from: base + parameter.name.start, count: parameter.name.count)
            cursor += parameter.name.count
            bytes[cursor] = 0
            cursor += 1
            let value = cursor
            guard let count = RequestLine.decodeValue(parameter.value, in: line, into: bytes + cursor) else { return false }
            cursor += count
            bytes[cursor] = 0
            cursor += 1
            parameterOffsets.append(Parameter(name: name, value: value, valueLength: count))
        }
        // A lane takes the same few routes over and over: keeping the
        // String it holds spares a retain and a release.
        if routeText != route { routeText = route }
        return true
    }

    // MARK: Filling from bytes (a worker's lane, from a request frame)

    /// Starts refilling this request part by part: `add…` each part in
    /// order, then `assign(id:attempt:)`. `byteCount` is what the parts
    /// will take, their NULs included (a request frame's payload is always
    /// enough: each part has a 4-byte length there); storage is sized for
    /// it up front, and grows if the parts outgrow it. Allocates only to grow.
    public func beginFill(byteCount: Int, route: String) {
        let needed = byteCount + route.utf8.count + 64
        if needed > capacity {
            storage.deallocate()
            capacity = max(needed, capacity * 2)
            storage = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        }
        fields = nil
        sourceOffset = nil
        parameterOffsets.removeAll(keepingCapacity: true)
        argumentOffsets.removeAll(keepingCapacity: true)
        routeText = route
        fillCursor = 0
    }

    /// The URL, then the scheme: the first two parts.
    public func addURL(_ bytes: UnsafeRawBufferPointer) { _ = addBytes(bytes) }
    public func addScheme(_ bytes: UnsafeRawBufferPointer) {
        schemeOffset = addBytes(bytes)
        var route = routeText
        routeOffset = route.withUTF8 { addBytes(UnsafeRawBufferPointer($0)) }
    }
    public func addSource(_ bytes: UnsafeRawBufferPointer) { sourceOffset = addBytes(bytes) }
    public func addParameter(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let nameOffset = addBytes(name)
        let valueOffset = addBytes(value)
        parameterOffsets.append(Parameter(name: nameOffset, value: valueOffset, valueLength: value.count))
    }
    public func addArgument(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let nameOffset = addBytes(name)
        let valueOffset = addBytes(value)
        argumentOffsets.append(Parameter(name: nameOffset, value: valueOffset, valueLength: value.count))
    }

    /// Copies `bytes` and a NUL at the fill cursor; returns where they went.
    private func addBytes(_ bytes: UnsafeRawBufferPointer) -> Int {
        let offset = fillCursor
        if offset + bytes.count + 1 > capacity { grow(toHold: offset + bytes.count + 1) }
        if let base = bytes.baseAddress { memcpy(storage + offset, base, bytes.count) }
        storage[offset + bytes.count] = 0
        fillCursor = offset + bytes.count + 1
        return offset
    }

    /// Moves the parts filled so far to storage of at least `needed` bytes:
    /// `beginFill` was told less than its parts take. Nothing has been handed
    /// to a handler yet (`beginFill` may reallocate too), so nothing points
    /// into the old storage.
    private func grow(toHold needed: Int) {
        let larger = max(needed, capacity * 2)
        let moved = UnsafeMutablePointer<CChar>.allocate(capacity: larger)
        moved.update(from: storage, count: fillCursor)
        storage.deallocate()
        storage = moved
        capacity = larger
    }

    /// Sets the host's number for the request and its attempt, once the
    /// fast lane takes it (both are set on every refill, so none carries over).
    public func assign(id: UInt64, attempt: UInt32 = 1) {
        self.id = id
        self.attempt = attempt
    }

    deinit { storage.deallocate() }

    public var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    public static func from(_ pointer: OpaquePointer?) -> NativeRequest? {
        guard let pointer else { return nil }
        return Unmanaged<NativeRequest>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// Runs `body` on the request behind `pointer` without retaining it (the
    /// host keeps it alive until the reply is completed).
    @inline(__always)
    public static func borrow<R>(_ pointer: OpaquePointer?, _ body: (NativeRequest) -> R?) -> R? {
        guard let pointer else { return nil }
        return Unmanaged<NativeRequest>.fromOpaque(UnsafeRawPointer(pointer))._withUnsafeGuaranteedRef(body)
    }

    public var url: UnsafePointer<CChar> { UnsafePointer(storage) }
    public var scheme: UnsafePointer<CChar> { UnsafePointer(storage + schemeOffset) }
    public var source: UnsafePointer<CChar>? { sourceOffset.map { UnsafePointer(storage + $0) } }
    public var parameterCount: Int { parameterOffsets.count }
    public var route: UnsafePointer<CChar> { UnsafePointer(storage + routeOffset) }
    public var argumentCount: Int { argumentOffsets.count }

    public func argumentName(at index: Int) -> UnsafePointer<CChar>? {
        guard index >= 0, index < argumentOffsets.count else { return nil }
        return UnsafePointer(storage + argumentOffsets[index].name)
    }

    public func argumentValue(at index: Int) -> UnsafePointer<CChar>? {
        guard index >= 0, index < argumentOffsets.count else { return nil }
        return UnsafePointer(storage + argumentOffsets[index].value)
    }

    public func parameterName(at index: Int) -> UnsafePointer<CChar>? {
        guard index >= 0, index < parameterOffsets.count else { return nil }
        return UnsafePointer(storage + parameterOffsets[index].name)
    }

    public func parameterValue(at index: Int) -> (UnsafePointer<CChar>, Int)? {
        guard index >= 0, index < parameterOffsets.count else { return nil }
        let entry = parameterOffsets[index]
        return (UnsafePointer(storage + entry.value), entry.valueLength)
    }

    public func parameter(named name: UnsafePointer<CChar>) -> (UnsafePointer<CChar>, Int)? {
        find(name, in: parameterOffsets)
    }

    public func argument(named name: UnsafePointer<CChar>) -> UnsafePointer<CChar>? {
        find(name, in: argumentOffsets)?.0
    }

    private func find(_ name: UnsafePointer<CChar>, in entries: [Parameter]) -> (UnsafePointer<CChar>, Int)? {
        // Names mostly differ in their first byte: comparing it first
        // spares a call to strcmp for nearly every entry that is not it.
        let first = name.pointee
        for entry in entries where storage[entry.name] == first && strcmp(storage + entry.name, name) == 0 {
            return (UnsafePointer(storage + entry.value), entry.valueLength)
        }
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
