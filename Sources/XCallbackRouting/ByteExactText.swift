/// A string compared and hashed byte for byte (UTF-8), as URL components are.
///
/// `String`'s own `==` and hash follow Unicode canonical equivalence, so keyed by
/// `String` a route written `café` (U+00E9) would also match a request for
/// `cafe%CC%81` (e + U+0301), and two patterns differing only that way would be
/// one route. Everything else about a URL compares bytes (parameter names, the
/// parser's components), so routes do too.
struct ByteExactText: Hashable, Sendable {
    var text: String

    init(_ text: String) {
        self.text = text
    }

    static func == (lhs: ByteExactText, rhs: ByteExactText) -> Bool {
        guard lhs.text.utf8.count == rhs.text.utf8.count else { return false }
        return lhs.text.withUTF8Buffer { a in rhs.text.withUTF8Buffer { b in equalBytes(a, b) } }
    }

    /// Whether two buffers of the same length hold the same bytes, eight at a time:
    /// this runs once per trie level of every lookup, where a byte loop shows.
    @inline(__always)
    private static func equalBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        let count = a.count
        var index = 0
        while index &+ 8 <= count {
            let left = UnsafeRawPointer(x + index).loadUnaligned(as: UInt64.self)
            let right = UnsafeRawPointer(y + index).loadUnaligned(as: UInt64.self)
            if left != right { return false }
            index &+= 8
        }
        while index < count {
            if x[index] != y[index] { return false }
            index &+= 1
        }
        return true
    }

    func hash(into hasher: inout Hasher) {
        text.withUTF8Buffer { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension String {
    /// The UTF-8 bytes without copying a native string.
    @inline(__always)
    fileprivate func withUTF8Buffer<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }
}
