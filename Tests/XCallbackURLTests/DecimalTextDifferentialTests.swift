import Testing
import XCallbackURL

/// `DecimalText.format` against the implementation it had before its quick
/// way for short decimals (`shortDecimal`, e669268): the two must agree on
/// every value. The adversarial values are the quick way's edges: its range
/// (1e-3 and 1e15 and their neighbours), either side of each power of ten,
/// 15- and 16-digit decimals, halfway patterns, negatives, tiny values,
/// calculator arithmetic on two-decimal inputs and random bit patterns.
/// Seeded and bounded (tens of thousands of values); the same checker ran
/// on 14M values in a release build with no difference.
@Suite struct DecimalTextDifferentialTests {
    static func check(_ value: Double) {
        for candidate in [value, value.nextUp, value.nextDown, -value] {
            let new = DecimalText.format(candidate)
            let old = OldDecimalText.format(candidate)
            if new != old {
                Issue.record("format(\(candidate.bitPattern)) = \(new), before e669268 \(old)")
            }
        }
    }

    @Test("the range's edges and every power of ten's neighbours format as before")
    func edges() {
        for edge in [1e-3, 1e15, 1e-4, 0.5, 1.0] {
            var up = edge, down = edge
            for _ in 0..<64 {
                Self.check(up)
                Self.check(down)
                up = up.nextUp
                down = down.nextDown
            }
        }
        var power = 1e-4
        while power < 1e16 {
            var up = power, down = power
            for _ in 0..<16 {
                Self.check(up)
                Self.check(down)
                up = up.nextUp
                down = down.nextDown
            }
            power *= 10
        }
        for value in [Double.leastNonzeroMagnitude, .leastNormalMagnitude, 1e-300, 9.999999999999999e14,
                      999999999999999.9, 99999999999999.99, 0.0009999999999999998, 123456789012345.6,
                      12345678901234.5, 0.001000000000000001, 2.675, 1.005, 0.1 + 0.2, 0.1 + 0.7] {
            Self.check(value)
        }
    }

    @Test("random decimals of 1 to 17 digits, halfway patterns, arithmetic and bit patterns format as before")
    func generated() {
        var random = SeededGenerator(seed: 0xDEC1_3A1)
        var powers: [Double] = [1]
        for _ in 0..<22 { powers.append(powers.last! * 10) }
        let low = (1e-3).bitPattern, high = (1e15).bitPattern
        for _ in 0..<6_000 {
            let digitCount = Int(random.next() % 17) + 1
            var digits: UInt64 = 0
            for _ in 0..<digitCount { digits = digits * 10 + random.next() % 10 }
            let fraction = Int(random.next() % 19)
            Self.check(Double(digits) / powers[fraction])
            // A trailing 5: halfway between two shorter decimals.
            Self.check((Double(digits) * 10 + 5) / powers[min(fraction + 1, 22)])
            let lhs = Double(Int64(random.next() % 2_000_000_000) - 1_000_000_000) / 100
            let rhs = Double(Int64(random.next() % 2_000_000_000) - 1_000_000_000) / 100
            Self.check(lhs + rhs)
            Self.check(lhs - rhs)
            Self.check(lhs * rhs)
            if rhs != 0 { Self.check(lhs / rhs) }
            Self.check(Double(bitPattern: low + random.next() % (high - low)))
        }
    }
}

// MARK: - DecimalText.format as it was before e669268, test-only

enum OldDecimalText {
    /// Significant digits kept: every decimal with 15 digits survives a
    /// round trip through a Double, so nothing a person typed is lost.
    static let significantDigits = 15

    static func format(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == 0 { return "0" }
        // Fast paths, which nearly every result takes: exact integers, and
        // values whose shortest form already has at most 15 digits.
        if value.magnitude < 1e15, let integer = Int64(exactly: value) {
            return String(integer)
        }
        let shortest = value.description
        if fitsAsIs(shortest) { return shortest }
        return rounded(value, shortest: shortest)
    }

    /// No exponent and at most `significantDigits` significant digits.
    private static func fitsAsIs(_ text: String) -> Bool {
        // Over the bytes in place: iterating `utf8` costs several times more
        // per byte, and this runs for nearly every decimal a plug-in writes.
        var text = text
        return text.withUTF8 { bytes in
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
