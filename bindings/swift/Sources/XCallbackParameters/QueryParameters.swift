/// The action parameters of a request, in the order they were written.
/// Repeated names keep every value; a single-value lookup takes the first.
public struct QueryParameters: Sendable, Equatable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
    public var items: [QueryParameter]

    public init(_ items: [QueryParameter] = []) {
        self.items = items
    }

    public init(arrayLiteral elements: QueryParameter...) {
        self.items = elements
    }

    public var startIndex: Int { items.startIndex }
    public var endIndex: Int { items.endIndex }
    public subscript(position: Int) -> QueryParameter { items[position] }

    /// The first value of `name`, or nil when it is absent.
    ///
    /// Names match byte for byte (UTF-8), as they were written in the URL: case-sensitive,
    /// and without Unicode normalisation ("e\u{301}" is not "é").
    @inlinable
    public func first(_ name: String) -> String? {
        for item in items where item.name.hasSameUTF8(as: name) { return item.value }
        return nil
    }

    /// Every value of `name`, in order; names match as in `first(_:)`.
    public func all(_ name: String) -> [String] {
        items.compactMap { $0.name.hasSameUTF8(as: name) ? $0.value : nil }
    }

    /// Whether `name` appears at all (possibly with an empty value).
    public func contains(_ name: String) -> Bool {
        first(name) != nil
    }

    /// Adds a parameter after the others (the URL parser builds them so).
    public mutating func append(_ item: QueryParameter) {
        items.append(item)
    }
}

extension String {
    /// Byte-for-byte equality, cheaper than `==` (which compares canonical equivalence)
    /// and what URL parameter names need.
    @inlinable @inline(__always)
    public func hasSameUTF8(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return withUTF8Bytes { mine in
            other.withUTF8Bytes { theirs in
                for index in 0..<mine.count where mine[index] != theirs[index] { return false }
                return true
            }
        }
    }
}

extension String {
    /// The UTF-8 bytes of the string without copying a native string (small ones are read from a stack copy).
    @inlinable @inline(__always)
    public func withUTF8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }
}
