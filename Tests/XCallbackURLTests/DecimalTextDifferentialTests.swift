import Testing
@testable import XCallbackParameters
import XCallbackURL

/// `DecimalText.format` against its general way (`formatFromDescription`,
/// what it was before its quick way for short decimals, `shortDecimal`,
/// e669268): the two must agree on every value either may take. The adversarial values are the quick way's edges: its range
/// (1e-3 and 1e15 and their neighbours), either side of each power of ten,
/// 15- and 16-digit decimals, halfway patterns, negatives, tiny values,
/// calculator arithmetic on two-decimal inputs and random bit patterns.
/// Seeded and bounded (tens of thousands of values); the same checker ran
/// on 14M values in a release build with no difference.
@Suite struct DecimalTextDifferentialTests {
    static func check(_ value: Double) {
        for candidate in [value, value.nextUp, value.nextDown, -value] {
            // Zero, infinities, NaN and integers below 1e15 take neither.
            guard candidate.isFinite, candidate != 0,
                  candidate.magnitude >= 1e15 || Int64(exactly: candidate) == nil else { continue }
            let new = DecimalText.format(candidate)
            let old = DecimalText.formatFromDescription(candidate)
            if new != old {
                Issue.record("format(\(candidate.bitPattern)) = \(new), by its description \(old)")
            }
        }
    }

    @Test("the range's edges and every power of ten's neighbours format as their description does")
    func edges() {
        func checkAround(_ value: Double, steps: Int) {
            var up = value, down = value
            for _ in 0..<steps {
                Self.check(up)
                Self.check(down)
                up = up.nextUp
                down = down.nextDown
            }
        }
        for edge in [1e-3, 1e15, 1e-4, 0.5, 1.0] { checkAround(edge, steps: 64) }
        var power = 1e-4
        while power < 1e16 {
            checkAround(power, steps: 16)
            power *= 10
        }
        for value in [Double.leastNonzeroMagnitude, .leastNormalMagnitude, 1e-300, 9.999999999999999e14,
                      999999999999999.9, 99999999999999.99, 0.0009999999999999998, 123456789012345.6,
                      12345678901234.5, 0.001000000000000001, 2.675, 1.005, 0.1 + 0.2, 0.1 + 0.7] {
            Self.check(value)
        }
    }

    @Test("random decimals of 1 to 17 digits, halfway patterns, arithmetic and bit patterns format as their description does")
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
