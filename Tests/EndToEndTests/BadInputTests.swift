import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 9, bad input: a corpus of hostile lines, each with the outcome the
/// SPEC (sections 2 and 3) and the docs/usage.md ("Requests the host refuses up
/// front", "Reliability") document for it.
///
/// `XCALLBACK_STRESS_SCALE=N` repeats the mixed-file run N times as often
/// (default 1; see docs/reliability.md).
@Suite("Bad input: hostile lines", .ownThreads)
struct BadInputTests {
    // MARK: the corpus

    /// One parameter of a callback URL parsed back; `value` nil means any value.
    struct Parameter: CustomStringConvertible, Sendable {
        let name: String
        let value: String?
        init(_ name: String, _ value: String?) {
            self.name = name
            self.value = value
        }
        var description: String { "\(name)=\(value ?? "*")" }
    }

    /// What the host must answer to one line.
    enum Expected: Sendable, CustomStringConvertible {
        /// No record: a blank line or a comment.
        case skipped
        /// An error outcome with this code and domain.
        case error(String, domain: String = "xcallback")
        /// A success carrying exactly these parameters.
        case success([String: String])
        /// This outcome, written to a callback URL that starts with `url`
        /// and, parsed back, carries exactly these parameters in this order:
        /// nothing a value held was taken for a parameter of its own.
        case delivered(outcome: String, to: String, parameters: [Parameter])

        var description: String {
            switch self {
            case .skipped: "no record"
            case .error(let code, let domain): "error \(code) (\(domain))"
            case .success(let params): "success \(params.sorted { $0.key < $1.key })"
            case .delivered(let outcome, let url, let parameters): "\(outcome) to \(url) with \(parameters)"
            }
        }

        var isRecord: Bool {
            if case .skipped = self { return false }
            return true
        }
    }

    struct HostileLine: Sendable {
        let name: String
        /// The line without its LF.
        let bytes: [UInt8]
        let expected: Expected

        init(_ name: String, _ bytes: [UInt8], _ expected: Expected) {
            self.name = name
            self.bytes = bytes
            self.expected = expected
        }

        init(_ name: String, _ text: String, _ expected: Expected) {
            self.init(name, Array(text.utf8), expected)
        }
    }

    /// The host's default line limit (64 KiB; docs/usage.md, "run").
    static let limit = 65_536
    static let add = "calc://x-callback-url/add?"
    static let invalidURL = Expected.error("InvalidURL")
    /// Found by the Swift kit inside the Calculator plug-in: its domain.
    static let parameterError = Expected.error("ParameterError", domain: "calculator")
    static let notFound = Expected.error("NotFoundAction")
    static let three = Expected.success(["result": "3"])

    /// `calc add lhs=1 rhs=2`, padded with a `pad` parameter to `length` bytes.
    static func paddedAdd(length: Int) -> [UInt8] {
        let head = Array((add + "lhs=1&rhs=2&pad=").utf8)
        return head + Array(repeating: UInt8(ascii: "p"), count: length - head.count)
    }

    /// 10,000 distinct three-letter names (`aaa` … `oup`), each `=1`.
    static let tenThousandNames: String = {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        return (0..<10_000).map { index in
            String([letters[index / 676], letters[index / 26 % 26], letters[index % 26]]) + "=1"
        }.joined(separator: "&")
    }()

    static func bytes(_ pieces: Any...) -> [UInt8] {
        pieces.flatMap { piece -> [UInt8] in
            switch piece {
            case let text as String: Array(text.utf8)
            case let raw as [UInt8]: raw
            case let byte as UInt8: [byte]
            default: fatalError("unexpected piece \(piece)")
            }
        }
    }

    static let corpus: [HostileLine] = [
        // NUL, raw or escaped: plug-ins receive plain C strings.
        HostileLine("raw NUL in a value", bytes(add, "lhs=1", UInt8(0), "&rhs=2"), invalidURL),
        HostileLine("raw NUL first", bytes(UInt8(0), add, "lhs=1&rhs=2"), invalidURL),
        HostileLine("a line of one NUL", [0], invalidURL),
        HostileLine("%00 in a value", add + "lhs=1%00&rhs=2", invalidURL),
        HostileLine("%00 in a name", add + "lhs=1&rhs=2&%00=x", invalidURL),
        HostileLine("%00 in the path", "calc://x-callback-url/a%00dd?lhs=1&rhs=2", invalidURL),

        // Invalid UTF-8, raw and percent-escaped.
        HostileLine("lone continuation byte", bytes(add, "lhs=", UInt8(0x80), "&rhs=2"), invalidURL),
        HostileLine("overlong '/'", bytes(add, "lhs=", [0xC0, 0xAF] as [UInt8], "&rhs=2"), invalidURL),
        HostileLine("overlong NUL", bytes(add, "lhs=", [0xE0, 0x80, 0x80] as [UInt8], "&rhs=2"), invalidURL),
        HostileLine("UTF-16 surrogate", bytes(add, "lhs=", [0xED, 0xA0, 0x80] as [UInt8], "&rhs=2"), invalidURL),
        HostileLine("truncated sequence mid-line", bytes(add, "lhs=", [0xE2, 0x82] as [UInt8], "&rhs=2"), invalidURL),
        HostileLine("truncated sequence at the end", bytes(add, "lhs=1&rhs=2&t=", [0xF0, 0x9F, 0x98] as [UInt8]), invalidURL),
        HostileLine("byte 0xFF", bytes(add, "lhs=1&rhs=2&t=", UInt8(0xFF)), invalidURL),
        HostileLine("past U+10FFFF", bytes(add, "lhs=1&rhs=2&t=", [0xF4, 0x90, 0x80, 0x80] as [UInt8]), invalidURL),
        HostileLine("invalid UTF-8 in the scheme", bytes(UInt8(0xC3), "alc://x-callback-url/add"), invalidURL),
        HostileLine("%80: escaped lone continuation byte", add + "lhs=1&rhs=2&t=%80", invalidURL),
        HostileLine("%C0%AF: escaped overlong", add + "lhs=1&rhs=2&t=%C0%AF", invalidURL),
        HostileLine("%ED%A0%80: escaped surrogate", add + "lhs=1&rhs=2&t=%ED%A0%80", invalidURL),
        HostileLine("%E2%82: escaped truncated sequence", add + "lhs=1&rhs=2&t=%E2%82", invalidURL),
        HostileLine("%dd in the path", "calc://x-callback-url/a%dd", invalidURL),

        // CR: only CRLF ends a line; a CR alone is a byte of the line.
        HostileLine("CR alone inside a value", add + "lhs=1\r&rhs=2", parameterError),
        HostileLine("CR alone inside the path", "calc://x-callback-url/add\r?lhs=1&rhs=2", notFound),
        HostileLine("CR alone does not end a line", add + "lhs=1&rhs=2\r" + add + "lhs=3&rhs=4", parameterError),
        HostileLine("CRLF", add + "lhs=1&rhs=2\r", three),
        HostileLine("a line of one CR", "\r", .skipped),
        HostileLine("CR CR LF", "\r\r", .skipped),

        // Length: the limit counts the line without its terminator.
        HostileLine("1 MiB line", paddedAdd(length: 1 << 20), invalidURL),
        HostileLine("exactly the limit", paddedAdd(length: limit), three),
        HostileLine("exactly the limit, CRLF", paddedAdd(length: limit) + [13], three),
        HostileLine("one byte over the limit", paddedAdd(length: limit + 1), invalidURL),
        HostileLine("1 MiB comment", bytes("# ", [UInt8](repeating: UInt8(ascii: "c"), count: 1 << 20)), .skipped),

        // Many parameters: no limit but the line's; a lookup takes the first value.
        HostileLine("10,000 distinct parameters", add + "lhs=1&rhs=2&" + tenThousandNames, three),
        HostileLine("10,000 values for lhs: the first wins",
                    add + "lhs=7&" + String(repeating: "lhs=x&", count: 9_999) + "rhs=1", .success(["result": "8"])),
        HostileLine("10,000 empty pieces", add + String(repeating: "&", count: 10_000) + "lhs=1&rhs=2", three),

        // Percent-encoding: one level decoded; a malformed escape is refused.
        HostileLine("nested percent-encoding decodes one level", "myapp://alert/show?title=%2525252541&message=m",
                    .success(["title": "%25252541", "message": "m"])),
        HostileLine("% at the end", add + "lhs=1&rhs=2%", invalidURL),
        HostileLine("%4 at the end", add + "lhs=1&rhs=2%4", invalidURL),
        HostileLine("%zz", add + "lhs=1&rhs=%zz", invalidURL),
        HostileLine("%4g", add + "lhs=1&rhs=%4g", invalidURL),
        HostileLine("%%41", add + "lhs=1&rhs=%%41", invalidURL),
        HostileLine("%zz in the path", "calc://x-callback-url/%zz?lhs=1&rhs=2", invalidURL),
        HostileLine("%2B is a plus", add + "lhs=%2B1&rhs=2", three),

        // Callbacks the host could never deliver to.
        HostileLine("x-success without a scheme", add + "lhs=1&rhs=2&x-success=nope", invalidURL),
        HostileLine("x-error that is a path", add + "lhs=1&rhs=2&x-error=/path", invalidURL),
        HostileLine("x-cancel with an empty scheme", add + "lhs=1&rhs=2&x-cancel=://x", invalidURL),
        HostileLine("empty x-success", add + "lhs=1&rhs=2&x-success=", invalidURL),
        HostileLine("x-success scheme starting with a digit", add + "lhs=1&rhs=2&x-success=1app://", invalidURL),
        HostileLine("escaped name x%2Dsuccess without a scheme", add + "lhs=1&rhs=2&x%2Dsuccess=nope", invalidURL),
        HostileLine("a line that is only a callback parameter", "x-success=nope", invalidURL),
        HostileLine("escaped callback with a scheme", add + "lhs=1&rhs=2&x-success=app%3A%2F%2Fok",
                    .delivered(outcome: "success", to: "app://ok?", parameters: [Parameter("result", "3")])),

        // Values crafted to inject parameters into the outcome.
        HostileLine("label injecting x-success and errorCode",
                    add + "lhs=1&rhs=2&text=a%26x-success%3Devil%3A%2F%2Fx%26errorCode%3DX&x-success=app://ok",
                    .delivered(outcome: "success", to: "app://ok?",
                               parameters: [Parameter("result", "a&x-success=evil://x&errorCode=X=3")])),
        HostileLine("error message injecting errorCode",
                    add + "lhs=a%26errorCode%3DFake%26errorDomain%3Dfake&rhs=1&x-error=app://e?x=1",
                    .delivered(outcome: "error", to: "app://e?x=1&",
                               parameters: [Parameter("x", "1"), Parameter("errorCode", "ParameterError"),
                                            Parameter("errorMessage", nil), Parameter("errorDomain", "calculator")])),
        HostileLine("Alert echo injecting x-success and errorCode",
                    "myapp://alert/show?title=t%26x-success%3Devil%3A%2F%2F&message=%26errorCode%3DInjected&x-success=app://shown",
                    .delivered(outcome: "success", to: "app://shown?",
                               parameters: [Parameter("title", "t&x-success=evil://"),
                                            Parameter("message", "&errorCode=Injected")])),
        HostileLine("label with '#' cannot cut the callback", add + "lhs=1&rhs=2&text=a%23errorCode%3DX&x-success=app://ok",
                    .delivered(outcome: "success", to: "app://ok?", parameters: [Parameter("result", "a#errorCode=X=3")])),
        HostileLine("label with '+' and '='", add + "lhs=1&rhs=2&text=a+b=c&x-success=app://ok",
                    .delivered(outcome: "success", to: "app://ok?", parameters: [Parameter("result", "a+b=c=3")])),

        // Schemes.
        HostileLine("empty scheme", "://x", invalidURL),
        HostileLine("scheme only", "calc:", notFound),
        HostileLine("a colon only", ":", invalidURL),
        HostileLine("no colon", "calc", invalidURL),
        HostileLine("very long scheme", String(repeating: "a", count: 5_000) + "://x-callback-url/add?lhs=1&rhs=2", notFound),
        HostileLine("'_' in the scheme", "ca_lc://x-callback-url/add?lhs=1&rhs=2", invalidURL),
        HostileLine("scheme starting with a digit", "1calc://x-callback-url/add?lhs=1&rhs=2", invalidURL),
        HostileLine("upper-case scheme and x-callback-url host", "CALC://X-Callback-URL/add?lhs=1&rhs=2", three),

        // Hosts and Unicode.
        HostileLine("unicode host", "myapp://ålert/show?title=a&message=b", notFound),
        HostileLine("percent-encoded host", "myapp://%61lert/show?title=a&message=b", .success(["title": "a", "message": "b"])),
        HostileLine("raw unicode values", "myapp://alert/show?title=héllo&message=😀",
                    .success(["title": "héllo", "message": "😀"])),

        // White space inside a line stays part of it.
        HostileLine("spaces in values", "myapp://alert/show?title=a b&message= c", .success(["title": "a b", "message": " c"])),
        HostileLine("space in the path", "calc://x-callback-url/ad d?lhs=1&rhs=2", notFound),
        HostileLine("space inside a number", add + "lhs=1 2&rhs=2", parameterError),
        HostileLine("tab inside a value", add + "lhs=1\t&rhs=2", parameterError),
        HostileLine("tab before a name", add + "lhs=1&\trhs=2", parameterError),
        HostileLine("tabs around the line", "\t" + add + "lhs=1&rhs=2\t", three),

        // Comments, blanks, BOM.
        HostileLine("a line of only #", "#", .skipped),
        HostileLine("indented comment", "  \t# x", .skipped),
        HostileLine("comment with NUL and invalid UTF-8", bytes("# ", UInt8(0), [0xFF, 0xC0] as [UInt8]), .skipped),
        HostileLine("white space only", " \t \u{0B}\u{0C} ", .skipped),
        HostileLine("BOM first", "\u{FEFF}" + add + "lhs=1&rhs=2", invalidURL),
        HostileLine("BOM before a comment", "\u{FEFF}# comment", invalidURL),
    ]

    /// The corpus lines as one input, each followed by LF.
    static func input(_ lines: [HostileLine]) -> [UInt8] {
        var input: [UInt8] = []
        for line in lines { input += line.bytes + [10] }
        return input
    }

    /// The `input` a jsonl record echoes: the trimmed line, for lines whose
    /// echo is exact (valid UTF-8, within the limit); nil for the others.
    /// Lines holding U+FEFF are left out too: the host echoes it, but
    /// Foundation's JSONSerialization drops it from decoded strings.
    static func echo(of line: HostileLine) -> String? {
        var bytes = line.bytes
        if bytes.last == 13 { bytes.removeLast() }
        guard bytes.count <= limit, let text = String(validating: bytes, as: UTF8.self),
              !text.unicodeScalars.contains("\u{FEFF}") else { return nil }
        return text.trimmingCharacters(in: .init(charactersIn: " \t\n\r\u{0B}\u{0C}"))
    }

    /// Checks one record against what its line expects; nil if it matches,
    /// else why not.
    static func mismatch(_ record: Record, _ line: HostileLine) -> String? {
        if let echo = echo(of: line), record.input != echo {
            return "input echoed as \(record.input.map { "\($0.prefix(120))" } ?? "null")"
        }
        switch line.expected {
        case .skipped:
            return "a record for a line that has none"
        case .error(let code, let domain):
            guard record.outcome == "error", record.errorCode == code, record.errorDomain == domain else {
                return "got \(record)"
            }
            return record.callback == nil ? nil : "unexpected callback \(record.callback!)"
        case .success(let params):
            return record.outcome == "success" && record.params == params && record.callback == nil ? nil : "got \(record)"
        case .delivered(let outcome, let url, let parameters):
            guard record.outcome == outcome, let callback = record.callback, callback.hasPrefix(url) else {
                return "got \(record)"
            }
            let parsed = recordParameters(callback)
            let matches = parsed.count == parameters.count
                && zip(parsed, parameters).allSatisfy { $0.name == $1.name && ($1.value == nil || $0.value == $1.value) }
            return matches ? nil : "callback \(callback) parses back as \(parsed)"
        }
    }

    // MARK: tests

    @Test("the whole corpus in one run: one record per line that has one, in order, each the documented outcome",
          arguments: ["none", "process"])
    func corpusInOneRun(isolation: String) throws {
        let host = try HostFixture(["Calculator", "Alert"], isolation: isolation)
        let result = try host.run(["-k", "--output", "jsonl"], input: Self.input(Self.corpus), timeout: 60)
        #expect(result.status == .exited(0), "stderr: \(result.stderr.suffix(2000))")
        #expect(!looksLikeACrash(result.stderr))
        let records = try result.records()
        let answered = Self.corpus.filter(\.expected.isRecord)
        #expect(records.count == answered.count)
        for (record, line) in zip(records, answered) {
            if let problem = Self.mismatch(record, line) {
                Issue.record("\(line.name): expected \(line.expected); \(problem)")
            }
        }
    }

    @Test("hostile lines interleaved with good ones (-k): exactly one record per counted line, in order, nothing lost",
          .scaledTimeLimit(minutes: 5))
    func mixedFile() throws {
        let scale: Int = try environmentInteger("XCALLBACK_STRESS_SCALE", default: 1)
        var generator = SplitMix64(seed: 0xBAD1_1DE5)
        // Every corpus line `rounds` times, in a random order, each followed
        // by a good line with its own id.
        let rounds = 3 * scale
        var lines: [HostileLine] = []
        for round in 0..<rounds {
            for (index, line) in Self.corpus.shuffled(using: &generator).enumerated() {
                lines.append(line)
                let id = round * 1_000 + index
                lines.append(HostileLine("good line \(id)", "\(Self.add)lhs=\(id)&rhs=0.5",
                                         .success(["result": "\(id).5"])))
            }
        }
        let host = try HostFixture(["Calculator", "Alert"])
        let path = host.scratch.file("mixed.txt")
        try Data(Self.input(lines)).write(to: URL(fileURLWithPath: path))
        let child = try ChildProcess(host.runPrefix + ["-k", "--output", "jsonl"], stdin: .file(path))
        let status = child.waitForExit(timeout: 60.0 * Double(scale))
        #expect(status == .exited(0), "stderr: \(child.stderr.suffix(2000))")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        let answered = lines.filter(\.expected.isRecord)
        #expect(records.count == answered.count)
        var problems = 0
        for (record, line) in zip(records, answered) {
            guard let problem = Self.mismatch(record, line) else { continue }
            problems += 1
            if problems <= 10 { Issue.record("\(line.name): expected \(line.expected); \(problem)") }
        }
        #expect(problems == 0)
    }

    @Test("a 1 MiB line is InvalidURL at once and the next line is answered without waiting for more input",
          .scaledTimeLimit(minutes: 1))
    func hugeLineThenNext() throws {
        let host = try HostFixture(["Calculator"])
        let child = try host.start()
        #expect(child.write(Self.paddedAdd(length: 1 << 20) + [10]))
        #expect(child.write(Self.add + "lhs=40&rhs=2\n"))
        #expect(child.waitForStdoutLines(2, timeout: 10), "stdout: \(child.stdout.prefix(500))")
        child.closeInput()
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        let lines = child.stdoutLines
        #expect(lines.count == 2)
        #expect(lines.first.map { recordParameters($0).first?.value } == "InvalidURL")
        #expect(lines.last == "success?result=42")
    }

    @Test("url output: a value can never inject a parameter into the record")
    func noInjectionInURLRecords() throws {
        let host = try HostFixture(["Calculator", "Alert"])
        let result = try host.run(["-k"], lines: [
            Self.add + "lhs=1&rhs=2&text=a%26errorCode%3DX%26x-success%3Devil%3A%2F%2F",
            "myapp://alert/show?title=%26errorCode%3DInjected&message=%3Fa%3Db%23c",
            Self.add + "lhs=a%26errorCode%3DFake&rhs=1",
        ])
        #expect(result.status == .exited(0))
        let records = result.lines
        try #require(records.count == 3)
        #expect(records[0] == "success?result=a%26errorCode%3DX%26x-success%3Devil%3A%2F%2F%3D3")
        #expect(recordParameters(records[0]).map(\.name) == ["result"])
        #expect(records[1] == "success?title=%26errorCode%3DInjected&message=%3Fa%3Db%23c")
        #expect(recordParameters(records[1]).map(\.name) == ["title", "message"])
        #expect(recordParameters(records[2]).map(\.name) == ["errorCode", "errorMessage", "errorDomain"])
        #expect(recordParameters(records[2]).first?.value == "ParameterError")
        #expect(recordParameters(records[2])[1].value.contains("a&errorCode=Fake"))
    }
}
