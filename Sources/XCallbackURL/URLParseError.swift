/// Why a request line could not be parsed.
///
/// `offset` is the 0-based byte offset in the line where parsing failed; `message`
/// repeats it in words, for logs and for the `errorMessage` of an `InvalidURL` outcome.
public struct URLParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case empty
        case tooLong
        case nulByte
        case invalidUTF8
        case missingScheme
        case invalidSchemeCharacter
        case malformedPercentEscape
    }

    public var kind: Kind
    /// 0-based byte offset in the line where parsing failed.
    public var offset: Int
    /// A sentence for a human, e.g. "invalid percent escape '%G1' at byte 17".
    public var message: String

    public init(kind: Kind, offset: Int, message: String) {
        self.kind = kind
        self.offset = offset
        self.message = message
    }

    public var description: String { message }
}

// Error construction lives off the hot path: the parser only calls these when it gives up.
extension URLParseError {
    static var empty: URLParseError {
        URLParseError(kind: .empty, offset: 0, message: "empty line")
    }

    static func tooLong(count: Int, limit: Int) -> URLParseError {
        URLParseError(
            kind: .tooLong, offset: limit,
            message: "line is \(count) bytes long, more than the limit of \(limit) bytes")
    }

    static func nulByte(at offset: Int) -> URLParseError {
        URLParseError(kind: .nulByte, offset: offset, message: "NUL byte at byte \(offset)")
    }

    static func encodedNulByte(at offset: Int) -> URLParseError {
        URLParseError(
            kind: .nulByte, offset: offset,
            message: "percent-encoded NUL byte '%00' at byte \(offset)")
    }

    static func invalidUTF8(at offset: Int) -> URLParseError {
        URLParseError(kind: .invalidUTF8, offset: offset, message: "invalid UTF-8 at byte \(offset)")
    }

    static func invalidDecodedUTF8(at offset: Int) -> URLParseError {
        URLParseError(
            kind: .invalidUTF8, offset: offset,
            message: "percent escapes in the text at byte \(offset) decode to invalid UTF-8")
    }

    static var missingScheme: URLParseError {
        URLParseError(
            kind: .missingScheme, offset: 0,
            message: "missing scheme: a URL starts with a scheme and ':', as in 'app://x-callback-url/action'")
    }

    static func emptyScheme() -> URLParseError {
        URLParseError(
            kind: .missingScheme, offset: 0,
            message: "missing scheme: the line starts with ':'")
    }

    static func invalidSchemeCharacter(_ byte: UInt8, at offset: Int) -> URLParseError {
        let what = offset == 0 && byte.isSchemeCharacter
            ? "scheme must start with a letter, not '\(describe(byte))'"
            : "invalid character '\(describe(byte))' in scheme"
        return URLParseError(kind: .invalidSchemeCharacter, offset: offset, message: "\(what) at byte \(offset)")
    }

    /// `bytes` ends where the escaped text ends, so a cut-short escape shows as such.
    static func malformedPercentEscape(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> URLParseError {
        // Show the '%' and at most the two bytes meant to be hex digits.
        var shown = "%"
        var index = offset + 1
        while index < bytes.count, index <= offset + 2 {
            shown += describe(bytes[index])
            index += 1
        }
        let detail = offset + 2 >= bytes.count ? " (cut short by the end of the text)" : ""
        return URLParseError(
            kind: .malformedPercentEscape, offset: offset,
            message: "invalid percent escape '\(shown)'\(detail) at byte \(offset): '%' must be followed by two hex digits")
    }

    /// A byte as it can be shown inside quotes: printable ASCII as itself, anything else as \xNN.
    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x20 && byte < 0x7F { return String(UnicodeScalar(byte)) }
        let digits: [Character] = Array("0123456789ABCDEF")
        return "\\x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
    }
}
