/// A type a URL parameter's text can be converted to.
///
/// Enumerations with `String` raw values get a conformance for free: declare
/// `enum Kind: String, CaseIterable, ParameterValue { … }`.
public protocol ParameterValue {
    /// What a valid value looks like, as a phrase that completes "must be …":
    /// "an integer", "one of water, grass".
    static var parameterTypeDescription: String { get }
    /// The value `text` stands for, or nil when it does not convert.
    init?(parameterValue text: String)
}

extension ParameterValue where Self: RawRepresentable & CaseIterable, RawValue == String {
    public static var parameterTypeDescription: String {
        "one of " + allCases.map(\.rawValue).joined(separator: ", ")
    }

    public init?(parameterValue text: String) {
        self.init(rawValue: text)
    }
}

extension String: ParameterValue {
    public static var parameterTypeDescription: String { "text" }
    public init?(parameterValue text: String) { self = text }
}

extension Int: ParameterValue {
    public static var parameterTypeDescription: String { "an integer" }
    public init?(parameterValue text: String) { self.init(text, radix: 10) }
}

extension Int64: ParameterValue {
    public static var parameterTypeDescription: String { "an integer from \(Int64.min) to \(Int64.max)" }
    public init?(parameterValue text: String) { self.init(text, radix: 10) }
}

extension Int32: ParameterValue {
    public static var parameterTypeDescription: String { "an integer from \(Int32.min) to \(Int32.max)" }
    public init?(parameterValue text: String) { self.init(text, radix: 10) }
}

extension UInt: ParameterValue {
    public static var parameterTypeDescription: String { "a non-negative integer" }
    public init?(parameterValue text: String) { self.init(text, radix: 10) }
}

extension UInt64: ParameterValue {
    public static var parameterTypeDescription: String { "an integer from 0 to \(UInt64.max)" }
    public init?(parameterValue text: String) { self.init(text, radix: 10) }
}

extension UInt32: ParameterValue {
    public static var parameterTypeDescription: String { "an integer from 0 to \(UInt32.max)" }
    public init?(parameterValue text: String) { self.init(text, radix: 10) }
}

extension Double: ParameterValue {
    public static var parameterTypeDescription: String { "a decimal number" }

    /// Decimal notation only ("2", "4.2", "-1e3", ".5"): no "nan", "inf",
    /// hex floats or surrounding blanks, and nothing that overflows to infinity.
    public init?(parameterValue text: String) {
        guard let value = DecimalSyntax.double(text), value.isFinite else { return nil }
        self = value
    }
}

extension Float: ParameterValue {
    public static var parameterTypeDescription: String { "a decimal number" }

    public init?(parameterValue text: String) {
        guard DecimalSyntax.isDecimal(text), let value = Float(text), value.isFinite else { return nil }
        self = value
    }
}

extension Bool: ParameterValue {
    public static var parameterTypeDescription: String { "true or false" }

    /// true/false, 1/0, yes/no, in any case.
    public init?(parameterValue text: String) {
        switch text.lowercased() {
        case "true", "1", "yes": self = true
        case "false", "0", "no": self = false
        default: return nil
        }
    }
}

/// `[+-]? digits [. digits] [(e|E) [+-]? digits]`, with at least one digit before the exponent.
package enum DecimalSyntax {
    /// The value of a decimal's text; nil when the text is not one
    /// (`isDecimal`).
    ///
    /// Nearly every number people send takes Clinger's fast path, without
    /// strtod: at most 19 significant digits that make an integer up to
    /// 2^53, scaled by a power of ten up to 10^22. Both are exact doubles,
    /// so one IEEE multiplication or division rounds correctly, giving
    /// the very double `Double(text)` gives. Anything else is the standard
    /// library's.
    static func double(_ text: String) -> Double? {
        switch text.utf8.withContiguousStorageIfAvailable(quickDouble) {
        case .some(.some(let value)): return value
        default: return isDecimal(text) ? Double(text) : nil
        }
    }

    /// Clinger's fast path over valid decimal text; nil when the text is
    /// not valid or needs more than it.
    package static func quickDouble(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let count = bytes.count
        @inline(__always) func digit() -> UInt64? {
            guard index < count else { return nil }
            let value = bytes[index] &- UInt8(ascii: "0")
            return value < 10 ? UInt64(value) : nil
        }
        var negative = false
        if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            negative = bytes[index] == UInt8(ascii: "-")
            index += 1
        }
        var mantissa: UInt64 = 0
        var significant = 0
        var digits = 0
        var exponent = 0
        var fraction = false
        while true {
            if let value = digit() {
                digits += 1
                if significant > 0 || value != 0 {
                    significant += 1
                    guard significant <= 19 else { return nil }
                    mantissa = mantissa &* 10 &+ value
                }
                if fraction { exponent -= 1 }
                index += 1
            } else if !fraction, index < count, bytes[index] == UInt8(ascii: ".") {
                fraction = true
                index += 1
            } else {
                break
            }
        }
        guard digits > 0 else { return nil }
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var negativeExponent = false
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                negativeExponent = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var written = 0
            var exponentDigits = 0
            while let value = digit() {
                exponentDigits += 1
                guard exponentDigits <= 4 else { return nil }
                written = written * 10 + Int(value)
                index += 1
            }
            guard exponentDigits > 0 else { return nil }
            exponent += negativeExponent ? -written : written
        }
        guard index == count else { return nil }
        let magnitude: Double
        if mantissa == 0 {
            magnitude = 0
        } else {
            guard mantissa <= 1 << 53, exponent >= -22, exponent <= 22 else { return nil }
            magnitude = exponent >= 0 ? Double(mantissa) * exactPowersOfTen[exponent]
                                      : Double(mantissa) / exactPowersOfTen[-exponent]
        }
        return negative ? -magnitude : magnitude
    }

    /// 10^0 ... 10^22: every power of ten a double holds exactly.
    private static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    static func isDecimal(_ text: String) -> Bool {
        var iterator = text.utf8.makeIterator()
        var byte = iterator.next()
        if byte == 0x2B || byte == 0x2D { byte = iterator.next() }
        var mantissaDigits = 0
        while let digit = byte, digit >= 0x30 && digit <= 0x39 {
            mantissaDigits += 1
            byte = iterator.next()
        }
        if byte == 0x2E {
            byte = iterator.next()
            while let digit = byte, digit >= 0x30 && digit <= 0x39 {
                mantissaDigits += 1
                byte = iterator.next()
            }
        }
        guard mantissaDigits > 0 else { return false }
        if byte == 0x65 || byte == 0x45 {
            byte = iterator.next()
            if byte == 0x2B || byte == 0x2D { byte = iterator.next() }
            var exponentDigits = 0
            while let digit = byte, digit >= 0x30 && digit <= 0x39 {
                exponentDigits += 1
                byte = iterator.next()
            }
            guard exponentDigits > 0 else { return false }
        }
        return byte == nil
    }
}
