import XCallbackURL

/// The schemes the host's routes use, lowercased: a callback to one of them
/// is the next hop of a chain, dispatched inside the host, not a record.
/// The one copy of that rule, for the general path's Strings and a lane's
/// bytes.
struct RoutedSchemes: Sendable {
    private var schemes: [[UInt8]] = []

    init<Schemes: Sequence<String>>(_ schemes: Schemes) {
        for scheme in schemes { insert(scheme) }
    }

    mutating func insert(_ scheme: String) {
        let bytes = Array(scheme.lowercased().utf8)
        if !schemes.contains(bytes) { schemes.append(bytes) }
    }

    /// Whether the URL in `bytes` has one of the schemes (compared without
    /// regard to ASCII case, as RFC 3986 has it).
    func contains(schemeOf url: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let colon = url.firstIndex(of: UInt8(ascii: ":")) else { return false }
        return schemes.contains { scheme in
            scheme.count == colon && scheme.indices.allSatisfy { index in
                let byte = url[index]
                return byte.asciiLowercased == scheme[index]
            }
        }
    }

    func contains(schemeOf url: String) -> Bool {
        var url = url
        return url.withUTF8 { contains(schemeOf: $0) }
    }
}
