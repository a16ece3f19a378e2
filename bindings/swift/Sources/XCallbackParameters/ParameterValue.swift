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
        guard DecimalSyntax.isDecimal(text), let value = Double(text), value.isFinite else { return nil }
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
enum DecimalSyntax {
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
