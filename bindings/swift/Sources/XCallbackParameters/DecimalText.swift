/// How decimals are written in outcome parameters: rounded to 15
/// significant digits, as calculators show them, then without trailing
/// zeros. So `cbrt(27)` (3.0000000000000004 in binary floating point) is
/// `3`, `0.1 + 0.2` is `0.3`, `2 + 4.2` is `6.2`; integral values have no
/// fraction (`1024`); very large or small ones use an exponent (`1e+20`).
///
/// Works on the decimal digits of Swift's shortest round-trip form, so it
/// needs nothing beyond the standard library (no libm).
public enum DecimalText {
    /// Significant digits kept: every decimal with 15 digits survives a
    /// round trip through a Double, so nothing a person typed is lost.
    public static let significantDigits = 15

    public static func format(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == 0 { return "0" }
        // Fast paths, which nearly every result takes: exact integers, and
        // values whose shortest form already has at most 15 digits.
        if value.magnitude < 1e15, let integer = Int64(exactly: value) {
            return String(integer)
        }
        return shortDecimal(value) ?? formatFromDescription(value)
    }

    /// The general way for a finite, non-integral `value`: `description`,
    /// cut to `significantDigits` when longer. `shortDecimal` is a quicker
    /// way to the same text for most values (a test holds the two equal).
    static func formatFromDescription(_ value: Double) -> String {
        let shortest = value.description
        if fitsAsIs(shortest) { return shortest }
        return rounded(value, shortest: shortest)
    }

    /// What `description` writes for `value`, found without it, when that
    /// is what `format` returns: `value` not integral, 1e-3 ≤ |value| < 1e15
    /// (where `description` uses no exponent), and its shortest round-trip
    /// decimal has at most 15 significant digits. Most results are such,
    /// and `description` costs several times more. nil: not such a value,
    /// or not sure (the caller takes the general way).
    ///
    /// Why it is `description`: `description` writes the shortest decimal
    /// that reads back as `value`, and of two such the nearer. For k = 1,
    /// 2, … fraction digits, the only candidate is `value` × 10^k rounded:
    /// below 10^15, a decimal that reads back is within 1/8 of the exact
    /// product, and the product and the + 0.5 err by 1/16 at most each.
    /// `digits / scale` is the candidate read back, correctly rounded (both
    /// are exact doubles), so the first k whose candidate reads back gives
    /// the shortest. A neighbour that reads back too would make the choice
    /// a tie-break: nil then.
    private static func shortDecimal(_ value: Double) -> String? {
        let magnitude = value.magnitude
        guard magnitude >= 1e-3 && magnitude < 1e15 else { return nil }
        var scale = 1.0
        for fractionDigits in 1...18 {
            scale *= 10  // exact up to 10^22
            let scaled = magnitude * scale
            if scaled >= 1e15 { return nil }  // over 15 significant digits
            // Rounded by conversion: `rounded()` would need libm.
            let digits = Double(UInt64(scaled + 0.5))
            guard digits / scale == magnitude else { continue }
            if (digits - 1) / scale == magnitude || (digits + 1) / scale == magnitude { return nil }
            return render(UInt64(digits), fractionDigits: fractionDigits, negative: value < 0)
        }
        return nil
    }

    /// `digits` with a point before its last `fractionDigits` ("0.05" for
    /// 5 and 2), as `description` writes it.
    private static func render(_ digits: UInt64, fractionDigits: Int, negative: Bool) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { buffer in
            let text = buffer.baseAddress!
            var start = 40
            var rest = digits
            for _ in 0..<fractionDigits {
                start -= 1
                text[start] = UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0")
                rest /= 10
            }
            start -= 1
            text[start] = UInt8(ascii: ".")
            repeat {
                start -= 1
                text[start] = UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0")
                rest /= 10
            } while rest > 0
            if negative {
                start -= 1
                text[start] = UInt8(ascii: "-")
            }
            return String(decoding: UnsafeBufferPointer(start: text + start, count: 40 - start), as: UTF8.self)
        }
    }

    /// No exponent and at most `significantDigits` significant digits.
    private static func fitsAsIs(_ text: String) -> Bool {
        // Over the bytes in place: iterating `utf8` costs several times more
        // per byte. Borrowed where they are, not through `withUTF8`, which
        // wants a mutable copy of the String (a retain and a release).
        if let fits = text.utf8.withContiguousStorageIfAvailable(fitsAsIs) { return fits }
        var text = text
        return text.withUTF8(fitsAsIs)
    }

    private static func fitsAsIs(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var significant = 0
        var leadingZeros = true
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "e"): return false
            case UInt8(ascii: "0") where leadingZeros: continue
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                leadingZeros = false
                significant += 1
            default: continue
            }
        }
        return significant <= significantDigits
    }

    /// Rounds the shortest form's digits half up to `significantDigits`
    /// and renders them, in stack buffers: this runs for most quotients.
    private static func rounded(_ value: Double, shortest: String) -> String {
        var shortest = shortest  // "3.0000000000000004", "-1e-05", "1.5e+20"
        return shortest.withUTF8 { signed in
            // The sign is written again below.
            let text = signed.first == UInt8(ascii: "-") ? UnsafeBufferPointer(rebasing: signed.dropFirst()) : signed
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 96) { buffer in
                let digits = buffer.baseAddress!
                let output = digits + 32
                var count = 0
                var exponent = 0
                var integerDigits = 0
                var pointSeen = false
                var index = 0
                while index < text.count {
                    let byte = text[index]
                    if byte == UInt8(ascii: "e") {
                        exponent = parseExponent(text, from: index + 1)
                        break
                    }
                    if byte == UInt8(ascii: ".") {
                        pointSeen = true
                    } else if count < 32 {
                        digits[count] = byte &- UInt8(ascii: "0")
                        count += 1
                        if !pointSeen { integerDigits += 1 }
                    }
                    index += 1
                }
                exponent += integerDigits
                var first = 0
                while first < count - 1 && digits[first] == 0 {
                    first += 1
                    exponent -= 1
                }
                let start = digits + first
                count -= first
                if count > significantDigits {
                    let roundUp = start[significantDigits] >= 5
                    count = significantDigits
                    if roundUp {
                        var position = count - 1
                        while position >= 0 && start[position] == 9 {
                            start[position] = 0
                            position -= 1
                        }
                        if position >= 0 {
                            start[position] += 1
                        } else {
                            // 999… rounded up: one more digit in front (the
                            // buffer has room before `start` only if first > 0).
                            (start + 1).update(from: start, count: count)
                            start[0] = 1
                            exponent += 1
                            count = min(count + 1, significantDigits)
                        }
                    }
                }
                while count > 1 && start[count - 1] == 0 { count -= 1 }
                var length = 0
                if value < 0 {
                    output[0] = UInt8(ascii: "-")
                    length = 1
                }
                length = render(UnsafeBufferPointer(start: start, count: count), exponent, into: output, at: length)
                return String(decoding: UnsafeBufferPointer(start: output, count: length), as: UTF8.self)
            }
        }
    }

    /// The exponent after "e" in Swift's description ("+20", "-05").
    private static func parseExponent(_ text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        var negative = false
        if index < text.count && (text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+")) {
            negative = text[index] == UInt8(ascii: "-")
            index += 1
        }
        var value = 0
        while index < text.count {
            value = value * 10 + Int(text[index] &- UInt8(ascii: "0"))
            index += 1
        }
        return negative ? -value : value
    }

    /// Writes digits d1d2… (value 0.d1d2… × 10^exponent) at `output + at`;
    /// returns the length written so far.
    private static func render(_ digits: UnsafeBufferPointer<UInt8>, _ exponent: Int,
                               into output: UnsafeMutablePointer<UInt8>, at start: Int) -> Int {
        var length = start
        func put(_ byte: UInt8) {
            output[length] = byte
            length += 1
        }
        func putDigits(_ range: Range<Int>) {
            for index in range { put(digits[index] &+ UInt8(ascii: "0")) }
        }
        let count = digits.count
        switch exponent {
        case count...(significantDigits + 2):
            putDigits(0..<count)
            for _ in 0..<(exponent - count) { put(UInt8(ascii: "0")) }
        case 1..<count:
            putDigits(0..<exponent)
            put(UInt8(ascii: "."))
            putDigits(exponent..<count)
        case -5...0:
            put(UInt8(ascii: "0"))
            put(UInt8(ascii: "."))
            for _ in 0..<(-exponent) { put(UInt8(ascii: "0")) }
            putDigits(0..<count)
        default:
            putDigits(0..<1)
            if count > 1 {
                put(UInt8(ascii: "."))
                putDigits(1..<count)
            }
            let power = exponent - 1
            put(UInt8(ascii: "e"))
            put(power < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            let magnitude = abs(power)
            if magnitude < 10 { put(UInt8(ascii: "0")) }
            var divisor = 1
            while divisor * 10 <= magnitude { divisor *= 10 }
            while divisor > 0 {
                put(UInt8(truncatingIfNeeded: (magnitude / divisor) % 10) &+ UInt8(ascii: "0"))
                divisor /= 10
            }
        }
        return length
    }
}
