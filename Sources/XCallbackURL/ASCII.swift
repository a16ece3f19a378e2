// Byte constants and classification shared by the parser and the encoder,
// written branch-free where they sit in per-byte loops.

enum ASCII {
    static let percent: UInt8 = 0x25      // %
    static let ampersand: UInt8 = 0x26    // &
    static let slash: UInt8 = 0x2F        // /
    static let colon: UInt8 = 0x3A        // :
    static let equals: UInt8 = 0x3D       // =
    static let question: UInt8 = 0x3F     // ?
    static let hash: UInt8 = 0x23         // #

    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ 0x30 : nibble &+ 0x37
    }

    /// The value of a hex digit, or 0xFF: branch-free, so two digits can be checked with one test.
    @inline(__always)
    static func hexNibble(_ byte: UInt8) -> UInt8 {
        let digit = byte &- 0x30                  // '0'...'9' -> 0...9
        let letter = (byte | 0x20) &- 0x61        // 'a'...'f' and 'A'...'F' -> 0...5
        return digit < 10 ? digit : letter < 6 ? letter &+ 10 : 0xFF
    }

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 { byte.asciiLowercased }
}

extension UInt8 {
    /// A-Z as a-z, every other byte as it is: how schemes and hosts are
    /// compared and keyed, in this module and the lanes that read a line's
    /// bytes in place.
    @inlinable @inline(__always)
    public var asciiLowercased: UInt8 { (self >= 0x41 && self <= 0x5A) ? self | 0x20 : self }
}

extension UInt8 {
    /// RFC 3986 unreserved: A-Z a-z 0-9 - . _ ~ (a bit test: no branches, no table to load lazily).
    @inline(__always)
    var isUnreserved: Bool {
        // Bit n of the mask for bytes 0-63 / 64-127 is set when byte n (or 64 + n) is unreserved.
        let low: UInt64 = 0x03FF_6000_0000_0000    // - . 0-9
        let high: UInt64 = 0x47FF_FFFE_87FF_FFFE   // A-Z _ a-z ~
        let mask = self < 64 ? low : high
        return self < 128 && (mask >> UInt64(self & 63)) & 1 == 1
    }

    @inline(__always)
    var isASCIILetter: Bool { (self | 0x20) >= 0x61 && (self | 0x20) <= 0x7A }

    /// ALPHA / DIGIT / "+" / "-" / "."
    @inline(__always)
    var isSchemeCharacter: Bool {
        isASCIILetter || (self >= 0x30 && self <= 0x39) || self == 0x2B || self == 0x2D || self == 0x2E
    }
}
