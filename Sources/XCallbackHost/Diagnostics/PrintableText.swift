/// Text from a file name or a plug-in, made safe to print on one line: a
/// file named `a\nb.so` must not print as two lines of `plugins` output or
/// forge a log line. Control characters become C-style escapes (`\n`,
/// `\t`, `\x1b`), as `ls -b` shows them, and a backslash becomes `\\`, so
/// the printed form reads back unambiguously.
public enum PrintableText {
    public static func escaping(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") }) else { return text }
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\\": output += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                output += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
