// Deliberately naive re-implementations of percent-decoding and UTF-8
// validation, written straight from RFC 3986 and RFC 3629 without any of the
// word-at-a-time tricks of the real ones: the fuzz targets check that the
// fast code agrees with these on every input, errors and offsets included.

enum ReferenceDecoding {
    /// Why a byte range did not decode. Offsets are positions in the whole input.
    enum Failure: Error, Equatable, CustomStringConvertible {
        case malformedEscape(at: Int)
        case encodedNUL(at: Int)
        /// Raw bytes that are not UTF-8 (the offset of the first bad sequence).
        case invalidUTF8(at: Int)
        /// Escapes that decode to bytes that are not UTF-8 (the offset of the range).
        case invalidDecodedUTF8(at: Int)

        var description: String {
            switch self {
            case .malformedEscape(let at): return "malformed escape at \(at)"
            case .encodedNUL(let at): return "encoded NUL at \(at)"
            case .invalidUTF8(let at): return "invalid UTF-8 at \(at)"
            case .invalidDecodedUTF8(let at): return "escapes decode to invalid UTF-8 at \(at)"
            }
        }
    }

    /// Decodes `bytes[range]`: every `%` must be followed by two hex digits; the
    /// result must be UTF-8. Raw bytes are assumed valid UTF-8 (callers check).
    static func percentDecode(_ bytes: [UInt8], _ range: Range<Int>, rejectingNUL: Bool) -> Result<[UInt8], Failure> {
        var output: [UInt8] = []
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                index += 1
                continue
            }
            guard index + 2 < range.upperBound,
                  let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            else { return .failure(.malformedEscape(at: index)) }
            let value = high * 16 + low
            if value == 0 && rejectingNUL { return .failure(.encodedNUL(at: index)) }
            output.append(value)
            index += 3
        }
        if firstInvalidUTF8(output) != nil { return .failure(.invalidDecodedUTF8(at: range.lowerBound)) }
        return .success(output)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The offset of the first byte of the first sequence that is not UTF-8
    /// (RFC 3629 table 3-7: no overlong forms, no surrogates, nothing past
    /// U+10FFFF), or nil. Cross-checked with the standard library's validation.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var index = 0
        var result: Int?
        scan: while index < bytes.count {
            let lead = bytes[index]
            let length: Int
            var secondRange: ClosedRange<UInt8> = 0x80...0xBF
            switch lead {
            case 0x00...0x7F: index += 1; continue scan
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; secondRange = 0xA0...0xBF
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; secondRange = 0x80...0x9F
            case 0xF0: length = 4; secondRange = 0x90...0xBF
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; secondRange = 0x80...0x8F
            default: result = index; break scan
            }
            guard index + length <= bytes.count, secondRange.contains(bytes[index + 1]),
                  bytes[(index + 2)..<(index + length)].allSatisfy({ (0x80...0xBF).contains($0) })
            else { result = index; break scan }
            index += length
        }
        // Two independent answers to "is this UTF-8?" must agree, or the reference itself is wrong.
        precondition((result == nil) == (String(validating: bytes, as: UTF8.self) != nil),
                     "reference UTF-8 validation disagrees with the standard library on \(bytes)")
        return result
    }
}
