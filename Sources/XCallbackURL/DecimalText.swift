/// How decimals are written in outcome parameters: integral values without
/// a fraction (`6`, `1024`), others in Swift's shortest round-trip form
/// (`6.2`, `0.1`), so results read the way a person would write them.
public enum DecimalText {
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return String(value)
    }
}
