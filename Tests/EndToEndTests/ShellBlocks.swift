/// One ```sh block of a Markdown file: where it starts (1-based, the fence's
/// line), its lines, and the comment just before it when that comment starts
/// with the caller's directive prefix (else empty). The README's and the
/// plug-in guide's tests run them.
struct ShellBlock: Sendable {
    let line: Int
    let lines: [String]
    let directive: String

    /// Every ```sh block of `markdown`, in order.
    static func all(in markdown: String, directivePrefix: String) -> [ShellBlock] {
        var blocks: [ShellBlock] = []
        let lines = markdown.components(separatedBy: "\n")
        var index = 0
        while index < lines.count {
            guard lines[index] == "```sh" else { index += 1; continue }
            let directive = index > 0 && lines[index - 1].hasPrefix(directivePrefix) ? lines[index - 1] : ""
            var end = index + 1
            while end < lines.count && lines[end] != "```" { end += 1 }
            blocks.append(ShellBlock(line: index + 1, lines: Array(lines[(index + 1)..<end]), directive: directive))
            index = end + 1
        }
        return blocks
    }
}
