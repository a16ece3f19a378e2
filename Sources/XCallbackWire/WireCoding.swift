import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Appends little-endian integers and length-prefixed strings.
public struct WireWriter {
    public var output: [UInt8]

    public mutating func u8(_ value: UInt8) { output.append(value) }
    public mutating func u16(_ value: UInt16) {
        output.append(UInt8(truncatingIfNeeded: value))
        output.append(UInt8(truncatingIfNeeded: value >> 8))
    }
    public mutating func u32(_ value: UInt32) { integer(value) }
    public mutating func u64(_ value: UInt64) { integer(value) }

    /// Stored in place: appending the value's bytes as a raw buffer went
    /// through the generic path, byte by byte, for every length and id.
    @inline(__always)
    private mutating func integer<T: FixedWidthInteger>(_ value: T) {
        let size = MemoryLayout<T>.size
        output.append(addingCapacity: size) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                UnsafeMutableRawPointer(buffer.baseAddress!).storeBytes(of: value.littleEndian, as: T.self)
                initialized = size
            }
        }
    }
    public mutating func string(_ text: String) {
        u32(UInt32(text.utf8.count))
        output.append(contentsOf: text.utf8)
    }
    /// As `string`, for `count` bytes at `text`.
    public mutating func bytes(_ text: UnsafeRawPointer, count: Int) {
        u32(UInt32(count))
        // Typed, so the append is one copy: a raw buffer appends byte by byte.
        output.append(contentsOf: UnsafeBufferPointer(start: text.assumingMemoryBound(to: UInt8.self), count: count))
    }
    public mutating func pairs(_ items: [QueryParameter]) {
        u32(UInt32(items.count))
        for item in items {
            string(item.name)
            string(item.value)
        }
    }
}

/// Reads what WireWriter wrote; every read is bounds-checked.
public struct WireReader {
    public let bytes: UnsafeRawBufferPointer
    public var offset = 0

    public var isAtEnd: Bool { offset == bytes.count }

    public mutating func u8() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }
    public mutating func u16() -> UInt16? { integer(2).map { UInt16(truncatingIfNeeded: $0) } }

    public mutating func u32() -> UInt32? {
        guard bytes.count - offset >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    public mutating func u64() -> UInt64? {
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
    public mutating func span() -> (start: Int, count: Int)? {
        guard let length = u32().map(Int.init), bytes.count - offset >= length else { return nil }
        defer { offset += length }
        return (offset, length)
    }

    public mutating func string() -> String? {
        guard let length = u32().map(Int.init), bytes.count - offset >= length else { return nil }
        defer { offset += length }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
    }

    /// Reads a pair list (a u32 count, then name and value strings),
    /// handing each pair's place in the payload to `body`; false when
    /// malformed. The count is bounded by the bytes left before anything
    /// is read, so a hostile count costs nothing.
    public mutating func eachPair(_ body: (_ name: (start: Int, count: Int), _ value: (start: Int, count: Int)) -> Void) -> Bool {
        guard let count = u32(), Int(count) <= (bytes.count - offset) / 8 else { return false }
        for _ in 0..<count {
            guard let name = span(), let value = span() else { return false }
            body(name, value)
        }
        return true
    }

    public mutating func pairs() -> [QueryParameter]? {
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

extension UnsafeRawBufferPointer {
    public func slice(_ span: (start: Int, count: Int)) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[span.start..<span.start + span.count])
    }
}
