/// Pairs an `await` with the `response` that answers it (`requestID=`).
///
/// An ID correlates; it is not a secret: any program that can write to the
/// host's FIFO or socket can answer any request. IDs are 8 to 128 characters
/// from the RFC 3986 unreserved set (`A-Z a-z 0-9 - . _ ~`), so they travel
/// through URLs unchanged and never need decoding.
public struct RequestID: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    public static let lengths = 8...128

    /// `text`, if it is a valid ID; otherwise throws, saying why.
    public init(_ text: String) throws(InvalidRequestID) {
        guard Self.lengths.contains(text.utf8.count) else {
            throw InvalidRequestID(text, reason: "it must be \(Self.lengths.lowerBound) to \(Self.lengths.upperBound) characters long")
        }
        guard text.utf8.allSatisfy(Self.isUnreserved) else {
            throw InvalidRequestID(text, reason: "it may hold only A-Z, a-z, 0-9, '-', '.', '_' and '~'")
        }
        self.text = text
    }

    private init(unchecked text: String) {
        self.text = text
    }

    /// A fresh ID: 128 bits from the system's random number generator
    /// (getrandom on Linux), as 32 lowercase hex digits.
    public static func random() -> RequestID {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<2 {
            var word = generator.next() as UInt64
            for _ in 0..<16 {
                bytes.append(digits[Int(word & 0xF)])
                word >>= 4
            }
        }
        return RequestID(unchecked: String(decoding: bytes, as: UTF8.self))
    }

    public var description: String { text }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}

/// A `requestID` value that is not a valid ``RequestID``.
public struct InvalidRequestID: Error, Sendable, CustomStringConvertible {
    public let message: String

    init(_ text: String, reason: String) {
        message = "requestID '\(text.prefix(140))' is not valid: \(reason)"
    }

    public var description: String { message }
}
