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
        let shortest = value.description
        if fitsAsIs(shortest) { return shortest }
        return rounded(value)
    }

    /// No exponent and at most `significantDigits` significant digits.
    private static func fitsAsIs(_ text: String) -> Bool {
        var significant = 0
        var leadingZeros = true
        for byte in text.utf8 {
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

    private static func rounded(_ value: Double) -> String {
        var (digits, exponent) = decimalDigits(of: value.magnitude)
        if digits.count > significantDigits {
            let roundUp = digits[significantDigits] >= 5
            digits.removeSubrange(significantDigits...)
            if roundUp {
                var index = digits.count - 1
                while index >= 0 && digits[index] == 9 {
                    digits[index] = 0
                    index -= 1
                }
                if index >= 0 {
                    digits[index] += 1
                } else {
                    digits.insert(1, at: 0)
                    exponent += 1
                }
            }
        }
        while digits.count > 1 && digits.last == 0 { digits.removeLast() }
        return (value < 0 ? "-" : "") + render(digits, exponent)
    }

    /// The significant digits of `value` (> 0) and the exponent E such that
    /// value = 0.d1d2d3… × 10^E.
    private static func decimalDigits(of value: Double) -> ([UInt8], Int) {
        let text = String(value)  // "3.0000000000000004", "1e-05", "1.5e+20"
        let parts = text.split(separator: "e", maxSplits: 1)
        var exponent = parts.count == 2 ? Int(parts[1]) ?? 0 : 0
        var digits: [UInt8] = []
        var pointSeen = false
        var integerDigits = 0
        for byte in parts[0].utf8 {
            if byte == UInt8(ascii: ".") {
                pointSeen = true
            } else {
                digits.append(byte &- UInt8(ascii: "0"))
                if !pointSeen { integerDigits += 1 }
            }
        }
        exponent += integerDigits
        while digits.first == 0 && digits.count > 1 {
            digits.removeFirst()
            exponent -= 1
        }
        return (digits, exponent)
    }

    private static func render(_ digits: [UInt8], _ exponent: Int) -> String {
        let text = String(decoding: digits.map { $0 + UInt8(ascii: "0") }, as: UTF8.self)
        switch exponent {
        case (digits.count)...(significantDigits + 2):
            return text + String(repeating: "0", count: exponent - digits.count)
        case 1..<digits.count:
            let split = text.index(text.startIndex, offsetBy: exponent)
            return text[..<split] + "." + text[split...]
        case -5...0:
            return "0." + String(repeating: "0", count: -exponent) + text
        default:
            let mantissa = digits.count == 1 ? text : String(text.prefix(1)) + "." + text.dropFirst()
            let power = exponent - 1
            return mantissa + (power < 0 ? "e-" : "e+") + (abs(power) < 10 ? "0" : "") + String(abs(power))
        }
    }
}
