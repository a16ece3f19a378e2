import Testing

@testable import XCallbackHost
@testable import XCallbackBridge
@testable import XCallbackSystem

/// What the host does with the bytes a plug-in prints before they reach its
/// log: cut into lines (`OutputLines`), limited (`OutputRateLimit`), and made
/// printable (`PrintableText`).
@Suite("A plug-in's printed output")
struct OutputLinesTests {
    static func lines(_ chunks: [String]) -> [OutputLines.Line] {
        var splitter = OutputLines()
        var lines: [OutputLines.Line] = []
        for chunk in chunks {
            Array(chunk.utf8).withUnsafeBytes { splitter.take($0) { lines.append($0) } }
        }
        splitter.end { lines.append($0) }
        return lines
    }

    @Test("a line is a line however it arrives; CRLF loses its CR; the last one counts without a newline")
    func splitting() {
        let lines = Self.lines(["a", "b\nc", "d\r\n", "", "e"])
        #expect(lines.map { String(decoding: $0.text, as: UTF8.self) } == ["ab", "cd", "e"])
        #expect(lines.allSatisfy { $0.cut == 0 })
    }

    @Test("a line past 4 KiB keeps its first 4 KiB and counts the rest")
    func cutting() {
        let long = String(repeating: "x", count: OutputLines.maxLength + 10)
        let lines = Self.lines([long, String(repeating: "y", count: 5), "\nnext\n"])
        #expect(lines.count == 2)
        #expect(lines[0].text.count == OutputLines.maxLength && lines[0].cut == 15)
        #expect(String(decoding: lines[1].text, as: UTF8.self) == "next")
    }

    @Test("a burst passes, a flood is dropped and counted, and the rate comes back")
    func rateLimit() {
        var limit = OutputRateLimit(now: 0)
        let burst = (0..<Int(OutputRateLimit.burst)).map { _ in limit.admit(now: 0).admitted }
        #expect(burst.allSatisfy { $0 })
        #expect(limit.admit(now: 0).admitted == false)
        #expect(limit.admit(now: 0).admitted == false)
        // A tenth of a second later, ten more lines' worth (100 a second).
        let later = limit.admit(now: 100_000_000)
        #expect(later.admitted && later.droppedBefore == 2)
        #expect(limit.admit(now: .max).admitted)
    }

    @Test("escapes what a terminal acts on: C0, DEL, C1, line separators, bidirectional controls")
    func printable() {
        #expect(PrintableText.escaping("plain text, é and 日本") == "plain text, é and 日本")
        #expect(PrintableText.escaping("a\nb\u{1B}[2K\\") == "a\\nb\\x1b[2K\\\\")
        #expect(PrintableText.escaping("\u{9B}2K\u{9D}0;title\u{9C}") == "\\u{9b}2K\\u{9d}0;title\\u{9c}")
        #expect(PrintableText.escaping("x\u{85}y\u{2028}z\u{2029}") == "x\\u{85}y\\u{2028}z\\u{2029}")
        #expect(PrintableText.escaping("\u{202E}gnp.exe\u{2066}") == "\\u{202e}gnp.exe\\u{2066}")
        #expect(PrintableText.escaping("a\u{200B}b\u{FEFF}\u{61C}") == "a\\u{200b}b\\u{feff}\\u{61c}")
    }

    @Test("a load error is one printable line, whatever dlerror said")
    func loadErrorIsOneLine() {
        let error = PluginLoadError(path: "/p/libx.so", reason: .cannotOpen("undefined symbol: zz\u{1B}]0;t\u{07}\n2026 critical forged\u{9B}"))
        #expect(error.description == "/p/libx.so: cannot load: undefined symbol: zz\\x1b]0;t\\x07\\n2026 critical forged\\u{9b}")
    }
}
