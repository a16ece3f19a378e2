import CXCallback
import XCallbackURL

/// The fields of one request as the host hands them to a handler.
public struct RequestFields: Sendable, Equatable {
    public var url: String
    public var scheme: String
    public var source: String?
    public var parameters: [QueryParameter]
    /// Route arguments in pattern order (`:name` values, `*` remainder).
    public var arguments: [QueryParameter]
    /// The host's number for the request (`request_id`; 0: none given).
    public var id: UInt64

    public init(url: String, scheme: String, source: String?,
                parameters: [QueryParameter], arguments: [QueryParameter], id: UInt64 = 0) {
        self.url = url
        self.scheme = scheme
        self.source = source
        self.parameters = parameters
        self.arguments = arguments
        self.id = id
    }
}

/// A request in the memory layout the C accessors read: every string
/// NUL-terminated in one allocation, so an accessor is an offset lookup and
/// the returned pointers stay valid for the request's whole life.
/// The `xcallback_request *` a plug-in sees is this object's address.
final class NativeRequest: @unchecked Sendable {
    private struct Parameter {
        var name: Int
        var value: Int
        var valueLength: Int
    }

    private let storage: UnsafeMutablePointer<CChar>
    private let urlOffset: Int
    private let schemeOffset: Int
    private let sourceOffset: Int?
    private let routeOffset: Int
    private let parameterOffsets: [Parameter]
    private let argumentOffsets: [Parameter]
    let fields: RequestFields

    /// `route` is the pattern of the route that matched, as registered.
    init(_ fields: RequestFields, route: String) {
        self.fields = fields
        var size = fields.url.utf8.count + fields.scheme.utf8.count + route.utf8.count + 3
        size += (fields.source?.utf8.count ?? 0) + 1
        for item in fields.parameters { size += item.name.utf8.count + item.value.utf8.count + 2 }
        for item in fields.arguments { size += item.name.utf8.count + item.value.utf8.count + 2 }
        let storage = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        var cursor = 0
        cursor = Self.copy(fields.url, to: storage, at: cursor)
        let urlOffset = 0
        let schemeOffset = cursor
        cursor = Self.copy(fields.scheme, to: storage, at: cursor)
        let routeOffset = cursor
        cursor = Self.copy(route, to: storage, at: cursor)
        var sourceOffset: Int?
        if let source = fields.source {
            sourceOffset = cursor
            cursor = Self.copy(source, to: storage, at: cursor)
        }
        var parameterOffsets: [Parameter] = []
        parameterOffsets.reserveCapacity(fields.parameters.count)
        for item in fields.parameters {
            let name = cursor
            cursor = Self.copy(item.name, to: storage, at: cursor)
            let value = cursor
            cursor = Self.copy(item.value, to: storage, at: cursor)
            parameterOffsets.append(Parameter(name: name, value: value, valueLength: cursor - value - 1))
        }
        var argumentOffsets: [Parameter] = []
        if !fields.arguments.isEmpty {
            argumentOffsets.reserveCapacity(fields.arguments.count)
            for item in fields.arguments {
                let name = cursor
                cursor = Self.copy(item.name, to: storage, at: cursor)
                let value = cursor
                cursor = Self.copy(item.value, to: storage, at: cursor)
                argumentOffsets.append(Parameter(name: name, value: value, valueLength: cursor - value - 1))
            }
        }
        self.storage = storage
        self.urlOffset = urlOffset
        self.schemeOffset = schemeOffset
        self.sourceOffset = sourceOffset
        self.routeOffset = routeOffset
        self.parameterOffsets = parameterOffsets
        self.argumentOffsets = argumentOffsets
    }

    /// Copies `text` and a NUL to `storage + at`; returns the offset after the NUL.
    @inline(__always)
    private static func copy(_ text: String, to storage: UnsafeMutablePointer<CChar>, at cursor: Int) -> Int {
        var text = text
        let count = text.withUTF8 { bytes -> Int in
            if let base = bytes.baseAddress { memcpy(storage + cursor, base, bytes.count) }
            return bytes.count
        }
        storage[cursor + count] = 0
        return cursor + count + 1
    }

    deinit { storage.deallocate() }

    var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    static func from(_ pointer: OpaquePointer?) -> NativeRequest? {
        guard let pointer else { return nil }
        return Unmanaged<NativeRequest>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// Runs `body` on the request behind `pointer` without retaining it (the
    /// host keeps it alive until the reply is completed).
    @inline(__always)
    static func borrow<R>(_ pointer: OpaquePointer?, _ body: (NativeRequest) -> R?) -> R? {
        guard let pointer else { return nil }
        return Unmanaged<NativeRequest>.fromOpaque(UnsafeRawPointer(pointer))._withUnsafeGuaranteedRef(body)
    }

    var url: UnsafePointer<CChar> { UnsafePointer(storage + urlOffset) }
    var scheme: UnsafePointer<CChar> { UnsafePointer(storage + schemeOffset) }
    var source: UnsafePointer<CChar>? { sourceOffset.map { UnsafePointer(storage + $0) } }
    var parameterCount: Int { parameterOffsets.count }
    var route: UnsafePointer<CChar> { UnsafePointer(storage + routeOffset) }
    var argumentCount: Int { argumentOffsets.count }

    func argumentName(at index: Int) -> UnsafePointer<CChar>? {
        guard index >= 0, index < argumentOffsets.count else { return nil }
        return UnsafePointer(storage + argumentOffsets[index].name)
    }

    func argumentValue(at index: Int) -> UnsafePointer<CChar>? {
        guard index >= 0, index < argumentOffsets.count else { return nil }
        return UnsafePointer(storage + argumentOffsets[index].value)
    }

    func parameterName(at index: Int) -> UnsafePointer<CChar>? {
        guard index >= 0, index < parameterOffsets.count else { return nil }
        return UnsafePointer(storage + parameterOffsets[index].name)
    }

    func parameterValue(at index: Int) -> (UnsafePointer<CChar>, Int)? {
        guard index >= 0, index < parameterOffsets.count else { return nil }
        let entry = parameterOffsets[index]
        return (UnsafePointer(storage + entry.value), entry.valueLength)
    }

    func parameter(named name: UnsafePointer<CChar>) -> (UnsafePointer<CChar>, Int)? {
        find(name, in: parameterOffsets)
    }

    func argument(named name: UnsafePointer<CChar>) -> UnsafePointer<CChar>? {
        find(name, in: argumentOffsets)?.0
    }

    private func find(_ name: UnsafePointer<CChar>, in entries: [Parameter]) -> (UnsafePointer<CChar>, Int)? {
        for entry in entries where strcmp(storage + entry.name, name) == 0 {
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
