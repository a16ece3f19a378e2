import CFFI
import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a URL value could not become a bound function's argument. The host
/// answers it as a `ParameterError` outcome (domain `xcallback`) whose
/// message names the parameter and its C type.
public struct ArgumentError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Problem: Sendable, Equatable {
        /// No URL parameter (or route argument) of that name.
        case missing
        /// The text is not a value of the type at all: `two` for a double.
        case invalid(value: String)
        /// A well-formed number outside the type's range: `128` for an
        /// int8_t. Never wrapped, never clamped.
        case outOfRange(value: String)
        /// A `const char *` value holding a NUL byte (`%00`), which the C
        /// string would silently cut short.
        case containsNUL
    }

    public var parameter: String
    public var type: CTypeName
    public var problem: Problem

    public var description: String {
        let expected = "\(type.withArticle) (\(type.type.valueDescription))"
        switch problem {
        case .missing:
            return "missing required parameter '\(parameter)': \(expected)"
        case .invalid(let value):
            return "parameter '\(parameter)' must be \(expected), got '\(Self.shortened(value))'"
        case .outOfRange(let value):
            return "parameter '\(parameter)' is out of range for \(type.spelling) (\(type.type.valueDescription)), got '\(Self.shortened(value))'"
        case .containsNUL:
            return "parameter '\(parameter)' must be \(expected): a C string cannot hold a NUL byte (%00)"
        }
    }

    /// The `ParameterError` outcome for this error.
    public var outcome: Outcome { HostError.parameter(description) }

    private static func shortened(_ value: String) -> String {
        value.count > 80 ? String(value.prefix(80)) + "…" : value
    }
}

/// Converting URL text to C argument values, and C return values to text.
public enum ArgumentConversion {
    /// Bytes of one argument slot: every supported type fits, aligned.
    public static let slotSize = 16

    /// Writes `text` as a value of `parameter`'s type into `slot`
    /// (``slotSize`` bytes, 16-byte aligned). For `const char *`, the slot
    /// receives a `malloc`ed NUL-terminated copy, which is also returned: the
    /// caller frees it after the call.
    public static func store(_ text: String, for parameter: CParameter,
                      into slot: UnsafeMutableRawPointer) throws(ArgumentError) -> UnsafeMutablePointer<CChar>? {
        func fail(_ problem: ArgumentError.Problem) -> ArgumentError {
            ArgumentError(parameter: parameter.name, type: parameter.type, problem: problem)
        }
        func integer<T: FixedWidthInteger>(_: T.Type) throws(ArgumentError) {
            guard isIntegerSyntax(text) else { throw fail(.invalid(value: text)) }
            guard let value = T(text, radix: 10) else { throw fail(.outOfRange(value: text)) }
            slot.storeBytes(of: value, as: T.self)
        }
        switch parameter.type.type {
        case .void:
            throw fail(.invalid(value: text))
        case .int8: try integer(Int8.self)
        case .int16: try integer(Int16.self)
        case .int32: try integer(Int32.self)
        case .int64: try integer(Int64.self)
        case .uint8: try integer(UInt8.self)
        case .uint16: try integer(UInt16.self)
        case .uint32: try integer(UInt32.self)
        case .uint64: try integer(UInt64.self)
        case .bool:
            guard let value = Bool(parameterValue: text) else { throw fail(.invalid(value: text)) }
            storeUnsigned(value ? 1 : 0, size: CType.bool.size, into: slot)
        case .double:
            guard let value = Double(parameterValue: text) else { throw fail(.invalid(value: text)) }
            slot.storeBytes(of: value, as: Double.self)
        case .float:
            guard Double(parameterValue: text) != nil else { throw fail(.invalid(value: text)) }
            // A decimal that overflows float (but not double) is out of range.
            guard let value = Float(parameterValue: text) else { throw fail(.outOfRange(value: text)) }
            slot.storeBytes(of: value, as: Float.self)
        case .cString:
            guard !text.utf8.contains(0) else { throw fail(.containsNUL) }
            guard let copy = strdup(text) else { throw fail(.invalid(value: text)) }
            slot.storeBytes(of: UnsafePointer(copy), as: UnsafePointer<CChar>.self)
            return copy
        }
        return nil
    }

    /// `[+-]?[0-9]+`: a decimal integer, nothing around it.
    public static func isIntegerSyntax(_ text: String) -> Bool {
        var digits = text.utf8[...]
        if let sign = digits.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    private static func storeUnsigned(_ value: UInt64, size: Int, into slot: UnsafeMutableRawPointer) {
        switch size {
        case 2: slot.storeBytes(of: UInt16(value), as: UInt16.self)
        case 4: slot.storeBytes(of: UInt32(value), as: UInt32.self)
        case 8: slot.storeBytes(of: value, as: UInt64.self)
        default: slot.storeBytes(of: UInt8(value), as: UInt8.self)
        }
    }

    // MARK: return values

    /// The return value in `buffer` (written by `ffi_call`) as outcome text;
    /// nil for `void` and for a NULL `const char *`.
    ///
    /// libffi widens integer returns narrower than `ffi_arg` to a whole
    /// `ffi_arg`: those are read as `ffi_arg` and narrowed to the declared
    /// width here.
    public static func text(of type: CType, in buffer: UnsafeRawPointer) -> String? {
        let argSize = Int(xcallback_ffi_arg_size())
        func narrowed<T: FixedWidthInteger>(_: T.Type) -> T {
            if MemoryLayout<T>.size >= argSize { return buffer.load(as: T.self) }
            let wide: UInt64 = argSize == 8 ? buffer.load(as: UInt64.self) : UInt64(buffer.load(as: UInt32.self))
            return T(truncatingIfNeeded: wide)
        }
        switch type {
        case .void: return nil
        case .int8: return String(narrowed(Int8.self))
        case .int16: return String(narrowed(Int16.self))
        case .int32: return String(narrowed(Int32.self))
        case .int64: return String(narrowed(Int64.self))
        case .uint8: return String(narrowed(UInt8.self))
        case .uint16: return String(narrowed(UInt16.self))
        case .uint32: return String(narrowed(UInt32.self))
        case .uint64: return String(narrowed(UInt64.self))
        case .bool:
            let value: UInt64
            switch CType.bool.size {
            case 2: value = UInt64(narrowed(UInt16.self))
            case 4: value = UInt64(narrowed(UInt32.self))
            case 8: value = narrowed(UInt64.self)
            default: value = UInt64(narrowed(UInt8.self))
            }
            return value != 0 ? "true" : "false"
        case .double:
            return DecimalText.format(buffer.load(as: Double.self))
        case .float:
            return format(buffer.load(as: Float.self))
        case .cString:
            return buffer.load(as: UnsafePointer<CChar>?.self).map { String(cString: $0) }
        }
    }

    /// A float in its own shortest round-trip form (`0.1`, not the
    /// `0.10000000149011612` of its double widening), integral values
    /// without a fraction, as DecimalText writes doubles.
    public static func format(_ value: Float) -> String {
        if !value.isFinite || (value.magnitude < 1e15 && Float(Int64(value)) == value) {
            return DecimalText.format(Double(value))
        }
        return String(value)
    }
}
