/// Text from a file name or a plug-in, made safe to print on one line: a
/// file named `a\nb.so` must not print as two lines of `plugins` output or
/// forge a log line. Control characters become C-style escapes (`\n`,
/// `\t`, `\x1b`), as `ls -b` shows them, and a backslash becomes `\\`, so
/// the printed form reads back unambiguously. So do the characters a
/// terminal or a viewer acts on beyond ASCII: the C1 controls (U+0080 to
/// U+009F: a single-byte CSI or OSC rewrites a terminal's line or title),
/// the line and paragraph separators, and every format character (the
/// bidirectional marks, overrides and isolates reorder what follows them;
/// zero-width ones hide text), as `\u{9b}`.
public enum PrintableText {
    public static func escaping(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
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
            case _ where needsEscape(scalar):
                output += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x5C, 0x7F...0x9F, 0x2028, 0x2029: return true
        case 0x20..<0x7F, 0xA0..<0x600: return false
        default:
            // Format characters (bidirectional marks, overrides and
            // isolates, zero-width ones, U+FEFF, tags) reorder or hide text.
            return scalar.properties.generalCategory == .format
        }
    }
}
