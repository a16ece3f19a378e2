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

    public init(url: String, scheme: String, source: String?,
                parameters: [QueryParameter], arguments: [QueryParameter]) {
        self.url = url
        self.scheme = scheme
        self.source = source
        self.parameters = parameters
        self.arguments = arguments
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
    private let parameterOffsets: [Parameter]
    private let argumentOffsets: [Parameter]
    let fields: RequestFields

    init(_ fields: RequestFields) {
        self.fields = fields
        var size = fields.url.utf8.count + fields.scheme.utf8.count + 2
        size += (fields.source?.utf8.count ?? 0) + 1
        for item in fields.parameters + fields.arguments {
            size += item.name.utf8.count + item.value.utf8.count + 2
        }
        let storage = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        var cursor = 0
        func append(_ text: String) -> Int {
            let start = cursor
            var text = text
            let count = text.withUTF8 { bytes -> Int in
                if let base = bytes.baseAddress { memcpy(storage + cursor, base, bytes.count) }
                return bytes.count
            }
            cursor += count
            storage[cursor] = 0
            cursor += 1
            return start
        }
        func appendPair(_ item: QueryParameter) -> Parameter {
            Parameter(name: append(item.name), value: append(item.value), valueLength: item.value.utf8.count)
        }
        self.storage = storage
        urlOffset = append(fields.url)
        schemeOffset = append(fields.scheme)
        sourceOffset = fields.source.map(append)
        parameterOffsets = fields.parameters.map(appendPair)
        argumentOffsets = fields.arguments.map(appendPair)
    }

    deinit { storage.deallocate() }

    var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    static func from(_ pointer: OpaquePointer?) -> NativeRequest? {
        guard let pointer else { return nil }
        return Unmanaged<NativeRequest>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    var url: UnsafePointer<CChar> { UnsafePointer(storage + urlOffset) }
    var scheme: UnsafePointer<CChar> { UnsafePointer(storage + schemeOffset) }
    var source: UnsafePointer<CChar>? { sourceOffset.map { UnsafePointer(storage + $0) } }
    var parameterCount: Int { parameterOffsets.count }

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
