/// RFC 3986 percent-coding, byte for byte.
///
/// Decoding leaves `+` as `+` (it is not a space in a URL query, whatever HTML
/// forms say). Encoding keeps only the unreserved bytes `A-Z a-z 0-9 - . _ ~`
/// literal, so an encoded name or value can never add a parameter, end a query
/// or start a fragment.
public enum PercentEncoding {
    /// Decodes `%XX` escapes. Throws `malformedPercentEscape` for a `%` not
    /// followed by two hex digits and `invalidUTF8` when the decoded bytes are
    /// not UTF-8; offsets count bytes from the start of `text`.
    public static func decode(_ text: Substring) throws(URLParseError) -> String {
        var text = text
        let result = text.withUTF8 { bytes in
            Result { () throws(URLParseError) -> String in try decode(bytes) }
        }
        return try result.get()
    }

    /// Decodes `%XX` escapes; see `decode(_:)` for `Substring`.
    public static func decode(_ text: String) throws(URLParseError) -> String {
        try decode(text[...])
    }

    /// Decodes `%XX` escapes in UTF-8 bytes; see `decode(_:)` for `Substring`.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(URLParseError) -> String {
        // Unlike a request line, these bytes have not been validated yet: a literal
        // run can be invalid UTF-8 as well as a decoded one.
        if let bad = UTF8Validation.firstInvalid(in: bytes, from: 0, to: bytes.count) { throw .invalidUTF8(at: bad) }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(bytes.count, 1)) {
            (scratch) throws(URLParseError) -> String in
            try decodedString(bytes, from: 0, to: bytes.count, scratch: scratch, rejectingNUL: false)
        }
    }

    /// Encodes every byte outside `A-Z a-z 0-9 - . _ ~` as `%XX` (uppercase hex).
    /// A space becomes `%20`, never `+`.
    public static func encode(_ text: String) -> String {
        if text.utf8.allSatisfy(\.isUnreserved) { return text }
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3)
        encode(text, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the encoding of `text` to `output`.
    public static func encode(_ text: String, into output: inout [UInt8]) {
        text.withUTF8Bytes { encode($0, into: &output) }
    }

    /// Appends the encoding of UTF-8 bytes to `output`.
    public static func encode(_ bytes: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        let length = encodedLength(bytes)
        if length == bytes.count {
            output.append(contentsOf: bytes)
        } else {
            output.appendUninitialized(count: length) { target in _ = writeEncoded(bytes, to: target) }
        }
    }

    /// How many bytes the encoding of `bytes` takes.
    @inline(__always)
    static func encodedLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var escapes = 0
        for byte in bytes where !byte.isUnreserved { escapes &+= 1 }
        return bytes.count &+ 2 &* escapes
    }

    /// Writes the encoding of `bytes` at `target`; returns the position after it.
    @inline(__always)
    static func writeEncoded(_ bytes: UnsafeBufferPointer<UInt8>, to target: UnsafeMutablePointer<UInt8>)
        -> UnsafeMutablePointer<UInt8>
    {
        var target = target
        for byte in bytes {
            if byte.isUnreserved {
                target.pointee = byte
                target += 1
            } else {
                target[0] = ASCII.percent
                target[1] = ASCII.hexDigit(byte >> 4)
                target[2] = ASCII.hexDigit(byte & 0x0F)
                target += 3
            }
        }
        return target
    }
}

extension PercentEncoding {
    /// Copies a URL that came from input, percent-encoding the bytes that
    /// could break or forge a record line (C0 controls, including CR and LF,
    /// and DEL): a decoded `x-success=app://ok%0Aerror?…` must stay one line.
    /// Everything else is copied as it is. Returns the position after it.
    @inline(__always)
    static func writeLineSafe(_ bytes: UnsafeBufferPointer<UInt8>, to target: UnsafeMutablePointer<UInt8>)
        -> UnsafeMutablePointer<UInt8>
    {
        guard let base = bytes.baseAddress else { return target }
        var target = target
        var index = 0
        while index < bytes.count {
            // Eight bytes a step while none needs escaping, which is nearly
            // always: a record's callback is copied, not escaped.
            if index &+ 8 <= bytes.count {
                let word = ByteSearch.load(base, index)
                if !ByteSearch.hasLineBreaking(word) {
                    UnsafeMutableRawPointer(target).storeBytes(of: word.littleEndian, as: UInt64.self)
                    target += 8
                    index &+= 8
                    continue
                }
            }
            let byte = base[index]
            if byte < 0x20 || byte == 0x7F {
                target[0] = ASCII.percent
                target[1] = ASCII.hexDigit(byte >> 4)
                target[2] = ASCII.hexDigit(byte & 0x0F)
                target += 3
            } else {
                target.pointee = byte
                target += 1
            }
            index &+= 1
        }
        return target
    }
}

extension Array where Element == UInt8 {
    /// Grows the array by `count` bytes that `body` fills in, starting at the pointer it is given.
    @inline(__always)
    mutating func appendUninitialized(count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Void) {
        guard count > 0 else { return }
        append(addingCapacity: count) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                body(buffer.baseAddress!)
                initialized = count
            }
        }
    }
}

extension PercentEncoding {
    /// `bytes[start..<end]` as a String, percent-decoded through `scratch`, which has
    /// room for `bytes.count - start` bytes (the decoder copies whole words and may
    /// write past `end - start`). The caller guarantees the raw range is valid UTF-8;
    /// decoded bytes are checked here. Error offsets are positions in `bytes`.
    ///
    /// Decoding into scratch memory and then copying with `String(decoding:)` is
    /// measurably faster than decoding into `String(unsafeUninitializedCapacity:)`.
    @inline(__always)
    static func decodedString(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int,
        scratch: UnsafeMutableBufferPointer<UInt8>, rejectingNUL: Bool
    ) throws(URLParseError) -> String {
        guard let base = bytes.baseAddress, let target = scratch.baseAddress else { return "" }
        let limit = bytes.count
        let firstPercent = ByteSearch.firstIndex(of: ASCII.percent, in: base, from: start, to: end, limit: limit)
        if firstPercent == end {
            return String(decoding: UnsafeBufferPointer(start: base + start, count: end - start), as: UTF8.self)
        }
        let count = try decode(
            base, from: start, firstPercent: firstPercent, to: end, limit: limit, into: target, rejectingNUL: rejectingNUL)
        return String(decoding: UnsafeBufferPointer(start: target, count: count), as: UTF8.self)
    }

    /// Decodes `bytes[start..<end]` into `target` without a String: the
    /// host's fast path. `target` has room for `bytes.count - start` bytes
    /// (whole words are copied). Returns the decoded length, or nil where
    /// `decodedString` would throw (a malformed escape, an escaped NUL,
    /// decoded bytes that are not UTF-8). The raw range is valid UTF-8.
    @inline(__always)
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int,
                       into target: UnsafeMutablePointer<UInt8>) -> Int? {
        guard let base = bytes.baseAddress, end > start else { return 0 }
        let limit = bytes.count
        let firstPercent = ByteSearch.firstIndex(of: ASCII.percent, in: base, from: start, to: end, limit: limit)
        if firstPercent == end {
            target.update(from: base + start, count: end - start)
            return end - start
        }
        do throws(URLParseError) {
            return try decode(base, from: start, firstPercent: firstPercent, to: end, limit: limit,
                              into: target, rejectingNUL: true)
        } catch {
            return nil
        }
    }

    /// Decodes `base[start..<end]`, whose first '%' is at `firstPercent`, into `target`;
    /// returns the decoded length. Reads no further than `limit`; `target` has room for
    /// `limit - start` bytes.
    private static func decode(
        _ base: UnsafePointer<UInt8>, from start: Int, firstPercent: Int, to end: Int, limit: Int,
        into target: UnsafeMutablePointer<UInt8>, rejectingNUL: Bool
    ) throws(URLParseError) -> Int {
        // Literal bytes are valid UTF-8 split at ASCII delimiters, so only decoded
        // bytes of 0x80 and up can break UTF-8: remember whether there were any.
        var highBits: UInt8 = 0
        var count = firstPercent - start
        target.update(from: base + start, count: count)
        var index = firstPercent
        while index < end {
            if index &+ 8 <= limit {
                // Copy a word at once and keep the bytes before its first '%' (and before
                // `end`). The store stays in bounds: count + 8 <= index - start + 8 <= limit - start.
                let word = ByteSearch.load(base, index)
                UnsafeMutableRawPointer(target + count).storeBytes(of: word.littleEndian, as: UInt64.self)
                let literal = ByteSearch.bytesBefore(ASCII.percent, inWord: word)
                if literal >= end &- index {
                    count &+= end &- index
                    break
                }
                index &+= literal
                count &+= literal
                if literal == 8 { continue }
            } else if base[index] != ASCII.percent {
                target[count] = base[index]
                count &+= 1
                index &+= 1
                continue
            }
            // base[index] is '%'.
            let high = index &+ 2 < end ? ASCII.hexNibble(base[index &+ 1]) : 0xFF
            let low = index &+ 2 < end ? ASCII.hexNibble(base[index &+ 2]) : 0xFF
            if high | low > 0x0F {
                throw .malformedPercentEscape(UnsafeBufferPointer(start: base, count: end), at: index)
            }
            let value = high &<< 4 | low
            if value == 0 && rejectingNUL { throw .encodedNulByte(at: index) }
            highBits |= value
            target[count] = value
            count &+= 1
            index &+= 3
        }
        if highBits >= 0x80,
            UTF8Validation.firstInvalid(in: UnsafeBufferPointer(start: target, count: count), from: 0, to: count) != nil
        {
            throw .invalidDecodedUTF8(at: start)
        }
        return count
    }
}
