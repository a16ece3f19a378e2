import XCallbackURL

/// SplitMix64: small, fast, and the same sequence on every run and platform,
/// so a failing property test can be replayed from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Generators of test text shared by the property and differential tests.
enum Generate {
    /// A scalar from a mix of ranges: ASCII (printable and control), Latin-1,
    /// the rest of the BMP (no surrogates) and the astral planes.
    static func scalar(_ rng: inout SeededGenerator, allowNUL: Bool = true) -> Unicode.Scalar {
        while true {
            let value: UInt32
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4: value = UInt32.random(in: 0x20...0x7E, using: &rng)
            case 4: value = UInt32.random(in: 0...0x1F, using: &rng)
            case 5: value = UInt32.random(in: 0x80...0xFF, using: &rng)
            case 6, 7: value = UInt32.random(in: 0x100...0xFFFF, using: &rng)
            case 8: value = UInt32.random(in: 0x10000...0x10FFFF, using: &rng)
            default:
                let special: [UInt32] = [0x25, 0x26, 0x3D, 0x2B, 0x23, 0x3F, 0x2F, 0x20, 0x3A, 0x7F, 0xFEFF, 0xFFFD]
                value = special.randomElement(using: &rng)!
            }
            if !allowNUL && value == 0 { continue }
            if let scalar = Unicode.Scalar(value) { return scalar }
        }
    }

    static func unicodeString(_ rng: inout SeededGenerator, maxLength: Int = 24, allowNUL: Bool = true) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...maxLength, using: &rng) {
            scalars.append(scalar(&rng, allowNUL: allowNUL))
        }
        return String(scalars)
    }

    /// Random bytes, repaired into a String (invalid sequences become U+FFFD).
    static func byteDerivedString(_ rng: inout SeededGenerator, maxLength: Int = 32) -> String {
        let bytes = (0..<Int.random(in: 0...maxLength, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func word(_ rng: inout SeededGenerator, from alphabet: String, length: ClosedRange<Int>) -> String {
        let characters = Array(alphabet)
        return String((0..<Int.random(in: length, using: &rng)).map { _ in characters.randomElement(using: &rng)! })
    }

    static let lowercase = "abcdefghijklmnopqrstuvwxyz"
    static let letters = lowercase + lowercase.uppercased()
    static let digits = "0123456789"

    static func scheme(_ rng: inout SeededGenerator) -> String {
        word(&rng, from: letters, length: 1...1) + word(&rng, from: letters + digits + "+-.", length: 0...8)
    }

    /// Bytes that look like URL pieces more often than uniform noise would.
    /// With `wellFormed`, no NUL, no invalid UTF-8 and no malformed escapes.
    static func urlishBytes(_ rng: inout SeededGenerator, maxLength: Int = 80, wellFormed: Bool = false) -> [UInt8] {
        let pieces: [[UInt8]] = wellFormed ? [
            Array("calc".utf8), Array("://".utf8), Array(":".utf8), Array("/".utf8), Array("?".utf8),
            Array("&".utf8), Array("=".utf8), Array("#".utf8), Array("%41".utf8), Array("%C3%A9".utf8), Array("%2F".utf8),
            Array("%26".utf8), Array("%3D".utf8), Array("x-success".utf8), Array("x-callback-url".utf8), Array("é".utf8),
            Array("🦊".utf8), Array("a".utf8), Array("Z9".utf8), Array("+".utf8), Array(" ".utf8), Array("x-source".utf8),
        ] : [
            Array("calc".utf8), Array("://".utf8), Array(":".utf8), Array("/".utf8), Array("?".utf8),
            Array("&".utf8), Array("=".utf8), Array("#".utf8), Array("%".utf8), Array("%4".utf8),
            Array("%41".utf8), Array("%C3%A9".utf8), Array("%E2%82".utf8), Array("%00".utf8), Array("%FF".utf8),
            Array("x-success".utf8), Array("x-callback-url".utf8), Array("é".utf8), [0], [0x80], [0xC3], [0xED, 0xA0, 0x80],
            [0xF0, 0x9F, 0xA6, 0x8A], Array("a".utf8), Array("Z9".utf8), Array("+".utf8), Array(" ".utf8),
        ]
        var bytes: [UInt8] = []
        while bytes.count < maxLength {
            if Int.random(in: 0..<8, using: &rng) == 0 { break }
            if Bool.random(using: &rng) {
                bytes += pieces.randomElement(using: &rng)!
            } else {
                bytes.append(UInt8.random(in: wellFormed ? 0x20...0x7E : 0...255, using: &rng))
                if wellFormed && bytes.last == 0x25 { bytes += Array("25".utf8) }
            }
        }
        return bytes
    }
}
