#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Wall-clock time as RFC 3339 in UTC with milliseconds,
/// `2025-06-01T12:34:56.789Z`, for JSON diagnostics.
public enum UTCTimestamp {
    public static func now() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return format(seconds: time.tv_sec, milliseconds: Int(time.tv_nsec / 1_000_000))
    }

    public static func format(seconds: Int, milliseconds: Int) -> String {
        var seconds = time_t(seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return padded(Int(parts.tm_year) + 1900, 4) + "-" + padded(Int(parts.tm_mon) + 1, 2) + "-"
            + padded(Int(parts.tm_mday), 2) + "T" + padded(Int(parts.tm_hour), 2) + ":"
            + padded(Int(parts.tm_min), 2) + ":" + padded(Int(parts.tm_sec), 2) + "."
            + padded(milliseconds, 3) + "Z"
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
