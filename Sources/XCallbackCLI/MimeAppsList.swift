/// Takes xcallback's associations out of a `mimeapps.list` file (XDG MIME
/// Applications Associations) and leaves every other byte as it was.
enum MimeAppsList {
    /// Sections whose lines associate a MIME type with desktop files.
    /// `[Removed Associations]` is the user's own veto and stays untouched.
    private static let associationSections = ["[Default Applications]", "[Added Associations]"]

    /// `text` with `desktopID` taken out of every `mimeType=` line of the
    /// association sections. A line left with no desktop file is removed
    /// whole; a line naming others too keeps them, in order. Nil when no
    /// line named `desktopID`.
    static func removing(_ desktopID: String, for mimeType: String, from text: [UInt8]) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(text.count)
        var inAssociations = false
        var changed = false
        for line in lines(of: text) {
            let content = line.last == UInt8(ascii: "\n") ? line.dropLast() : line[...]
            let indented = content.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            if indented.first == UInt8(ascii: "[") {
                let header = trimmed(String(decoding: indented, as: UTF8.self))
                inAssociations = associationSections.contains(header)
            } else if inAssociations, let edited = without(desktopID, for: mimeType, in: content) {
                changed = true
                if let edited { result += edited + (line.count > content.count ? [UInt8(ascii: "\n")] : []) }
                continue
            }
            result += line
        }
        return changed ? result : nil
    }

    /// The line `xdg-mime default` would add under `[Default Applications]`.
    static func defaultLine(desktopID: String, mimeType: String) -> String { "\(mimeType)=\(desktopID);" }

    /// For a `mimeType=` line naming `desktopID`: the line without it, or
    /// `.some(nil)` when nothing would be left. Nil for any other line.
    private static func without(_ desktopID: String, for mimeType: String, in content: ArraySlice<UInt8>) -> [UInt8]?? {
        guard let equals = content.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let key = String(decoding: content[..<equals], as: UTF8.self)
        // The format ignores white space around `=`.
        guard trimmed(key) == mimeType else { return nil }
        let value = String(decoding: content[content.index(after: equals)...], as: UTF8.self)
        let entries = value.split(separator: ";", omittingEmptySubsequences: false)
        let kept = entries.filter { trimmed($0) != desktopID }
        guard kept.count < entries.count else { return nil }
        let remaining = kept.filter { !trimmed($0).isEmpty }
        if remaining.isEmpty { return .some(nil) }
        return Array(content[...equals]) + Array(kept.joined(separator: ";").utf8)
    }

    /// Lines with their terminating newline (the last may have none).
    private static func lines(of text: [UInt8]) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = text.startIndex
        for index in text.indices where text[index] == UInt8(ascii: "\n") {
            lines.append(text[start...index])
            start = index + 1
        }
        if start < text.endIndex { lines.append(text[start...]) }
        return lines
    }
}

/// Without the blanks the format ignores at either end of a key, a value or a header.
private func trimmed(_ text: some StringProtocol) -> String {
    let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
    guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) }) else { return "" }
    return String(text[first...last])
}
