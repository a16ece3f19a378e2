/// How decimals are written in outcome parameters: integral values without
/// a fraction (`6`, `1024`), others in Swift's shortest round-trip form
/// (`6.2`, `0.1`), so results read the way a person would write them.
public enum DecimalText {
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        // Int64 round trip rather than rounded(): the module stays free of libm
        // (rounded() calls round(), which a stdlib-only executable does not link).
        if abs(value) < 1e15, Double(Int64(value)) == value {
            return String(Int64(value))
        }
        return String(value)
    }
}
