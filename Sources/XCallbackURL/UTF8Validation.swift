// Checks raw bytes before anything else looks at them: a request line must be
// valid UTF-8 and hold no NUL (plug-ins receive C strings, where a NUL would
// silently cut a value short).

enum UTF8Validation {
    /// The offset of the first byte of the first invalid UTF-8 sequence in
    /// `bytes[start..<end]`, or nil when the range is valid.
    static func firstInvalid(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int? {
        var i = start
        while i < end {
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0               // no overlong forms
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F              // no surrogates
            case 0xF0: length = 4; low = 0x90               // no overlong forms
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F              // nothing past U+10FFFF
            default: return i
            }
            if end - i < length { return i }
            let second = bytes[i + 1]
            if second < low || second > high { return i }
            var k = 2
            while k < length {
                if bytes[i + k] & 0xC0 != 0x80 { return i }
                k += 1
            }
            i += length
        }
        return nil
    }

    /// Throws for a NUL byte anywhere in `bytes`, and, when `validatingUTF8`,
    /// for the first invalid UTF-8 sequence. Eight bytes at a time while the
    /// text is plain ASCII, which is nearly always.
    static func checkLine(_ bytes: UnsafeBufferPointer<UInt8>, validatingUTF8: Bool) throws(URLParseError) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var i = 0
        if validatingUTF8 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while i &+ 8 <= count {
                let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                if ((word &- ones) & ~word | word) & highs != 0 { break }
                i &+= 8
            }
        } else {
            // Known-valid text needs no more than a NUL search.
            i = ByteSearch.firstIndex(of: 0, in: base, from: 0, to: count, limit: count)
            if i == count { return }
        }
        // Byte by byte from the first word that needs a closer look.
        while i < count {
            let byte = bytes[i]
            if byte == 0 { throw .nulByte(at: i) }
            if byte < 0x80 || !validatingUTF8 {
                i += 1
                continue
            }
            // Validate one sequence; NUL cannot hide inside it (continuation bytes are >= 0x80).
            let end = min(count, i + 4)
            var sequenceEnd = i + 1
            while sequenceEnd < end, bytes[sequenceEnd] & 0xC0 == 0x80 { sequenceEnd += 1 }
            if let bad = firstInvalid(in: bytes, from: i, to: sequenceEnd) { throw .invalidUTF8(at: bad) }
            i = sequenceEnd
        }
    }
}

/// UTF-8 validation for the host's byte paths (what `String(validating:)`
/// accepts, without making a String).
public enum UTF8Check {
    public static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        UTF8Validation.firstInvalid(in: bytes, from: 0, to: bytes.count) == nil
    }
}
