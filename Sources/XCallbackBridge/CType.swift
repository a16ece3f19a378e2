import CFFI

/// A C type a bound function may take or return: what the host can convert
/// a URL parameter to (and a return value back to text) without knowing
/// anything else about the function.
///
/// Platform-dependent C spellings (`int`, `long`, `size_t`, `char`) are
/// resolved to one of these fixed-width cases when a declaration is parsed,
/// following this target's data model (LP64 on 64-bit Linux) and the
/// signedness of its plain `char`.
public enum CType: Sendable, Hashable {
    case void
    case bool
    case int8, int16, int32, int64
    case uint8, uint16, uint32, uint64
    case float, double
    /// `const char *`: a NUL-terminated string the function only reads.
    case cString

    /// The libffi type descriptor (static storage in libffi).
    public var ffiType: UnsafeMutablePointer<ffi_type> {
        switch self {
        case .void: return xcallback_ffi_type_void()
        case .bool: return CType.boolStorage.ffiType
        case .int8: return xcallback_ffi_type_sint8()
        case .int16: return xcallback_ffi_type_sint16()
        case .int32: return xcallback_ffi_type_sint32()
        case .int64: return xcallback_ffi_type_sint64()
        case .uint8: return xcallback_ffi_type_uint8()
        case .uint16: return xcallback_ffi_type_uint16()
        case .uint32: return xcallback_ffi_type_uint32()
        case .uint64: return xcallback_ffi_type_uint64()
        case .float: return xcallback_ffi_type_float()
        case .double: return xcallback_ffi_type_double()
        case .cString: return xcallback_ffi_type_pointer()
        }
    }

    /// `_Bool` is passed as the unsigned integer of its size (1 on every
    /// ABI Linux runs on; checked, not assumed).
    private static var boolStorage: CType {
        switch xcallback_bool_size() {
        case 2: return .uint16
        case 4: return .uint32
        case 8: return .uint64
        default: return .uint8
        }
    }

    /// Bytes one value occupies in argument storage.
    public var size: Int {
        switch self {
        case .void: return 0
        case .bool: return Int(xcallback_bool_size())
        case .int8, .uint8: return 1
        case .int16, .uint16: return 2
        case .int32, .uint32, .float: return 4
        case .int64, .uint64, .double: return 8
        case .cString: return MemoryLayout<UnsafeRawPointer>.size
        }
    }

    /// The integer range of an integer type, for messages; nil otherwise.
    public var integerRange: (min: String, max: String)? {
        switch self {
        case .int8: return ("\(Int8.min)", "\(Int8.max)")
        case .int16: return ("\(Int16.min)", "\(Int16.max)")
        case .int32: return ("\(Int32.min)", "\(Int32.max)")
        case .int64: return ("\(Int64.min)", "\(Int64.max)")
        case .uint8: return ("0", "\(UInt8.max)")
        case .uint16: return ("0", "\(UInt16.max)")
        case .uint32: return ("0", "\(UInt32.max)")
        case .uint64: return ("0", "\(UInt64.max)")
        default: return nil
        }
    }

    /// What a valid URL value looks like, as a phrase: "an integer from -128 to 127".
    public var valueDescription: String {
        if let range = integerRange { return "an integer from \(range.min) to \(range.max)" }
        switch self {
        case .bool: return "true/false, 1/0 or yes/no"
        case .float, .double: return "a decimal number"
        case .cString: return "text without NUL bytes"
        default: return "nothing"
        }
    }
}

/// A C type as a declaration spelled it: the resolved ``CType`` and the
/// canonical spelling shown back to people (`unsigned long`, `const char *`).
public struct CTypeName: Sendable, Hashable, CustomStringConvertible {
    public var type: CType
    public var spelling: String

    public init(type: CType, spelling: String) {
        self.type = type
        self.spelling = spelling
    }

    public var description: String { spelling }

    /// "an int8_t", "a uint64_t", "a const char *": for "must be …" messages.
    public var withArticle: String {
        let first = spelling.first.map { Character($0.lowercased()) }
        let vowel = first.map { "aeiou".contains($0) } ?? false
        let soundsLikeYou = spelling.hasPrefix("uint")
        return (vowel && !soundsLikeYou ? "an " : "a ") + spelling
    }
}
