/// A freedesktop.org desktop entry of type Application, rendered as the
/// Desktop Entry Specification (1.5) wants it: string values escaped, and
/// the `Exec` command quoted by the spec's own rules (not a shell's).
struct DesktopEntry {
    /// One word of the `Exec` command line.
    enum ExecArgument: Equatable {
        /// A literal word: quoted when it holds a reserved character, `%` doubled.
        case literal(String)
        /// A field code such as `u` (one URL), written `%u` and never quoted.
        case fieldCode(Character)
    }

    var name: String
    var comment: String?
    var exec: [ExecArgument]
    /// Launchers ignore the entry when this file is missing or not executable.
    var tryExec: String?
    var mimeTypes: [String]
    var noDisplay = true
    /// `X-` keys, in order.
    var extensionKeys: [(key: String, value: String)] = []

    /// The file's text.
    var rendered: String {
        var lines = ["[Desktop Entry]", "Type=Application", "Version=1.5", "Name=" + Self.escaped(name)]
        if let comment { lines.append("Comment=" + Self.escaped(comment)) }
        lines.append("Exec=" + Self.escaped(Self.commandLine(exec)))
        if let tryExec { lines.append("TryExec=" + Self.escaped(tryExec)) }
        lines.append("Terminal=false")
        lines.append("NoDisplay=\(noDisplay)")
        // A list value: each item ends with a semicolon.
        lines.append("MimeType=" + mimeTypes.map { Self.escaped($0.replacing(";", with: "\\;")) + ";" }.joined())
        for (key, value) in extensionKeys { lines.append(key + "=" + Self.escaped(value)) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The `Exec` value before string escaping.
    static func commandLine(_ arguments: [ExecArgument]) -> String {
        arguments.map { argument in
            switch argument {
            case .fieldCode(let code): return "%" + String(code)
            case .literal(let word): return quotedIfNeeded(word.replacing("%", with: "%%"))
            }
        }.joined(separator: " ")
    }

    /// Characters the spec reserves in `Exec`: an argument holding one must be quoted.
    private static let reserved: Set<Character> = [
        " ", "\t", "\n", "\"", "'", "\\", ">", "<", "~", "|", "&", ";", "$", "*", "?", "#", "(", ")", "`",
    ]

    /// Quotes only when needed: simple launchers (xdg-open and xdg-mime in
    /// their generic mode) split `Exec` on white space and do not undo quotes,
    /// so a plain path must stay plain to work with them.
    private static func quotedIfNeeded(_ word: String) -> String {
        guard word.isEmpty || word.contains(where: reserved.contains) else { return word }
        var quoted = "\""
        for character in word {
            // Inside double quotes, these four take a backslash.
            if character == "\"" || character == "`" || character == "$" || character == "\\" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "\""
    }

    /// The spec's escapes for string values, applied after `Exec` quoting
    /// (so a backslash inside a quoted argument ends up as four).
    static func escaped(_ value: String) -> String {
        var result = ""
        for (index, character) in value.enumerated() {
            switch character {
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case " " where index == 0: result += "\\s"  // leading space would be trimmed
            default: result.append(character)
            }
        }
        return result
    }
}
