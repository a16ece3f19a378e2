import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/usage.md ("run"): lines, order, flushing, and that nothing is lost.
@Suite("Input lines and record order", .ownThreads)
struct InputTests {
    @Test("blank lines and # comments produce no record; CRLF and surrounding white space are trimmed")
    func blankCommentsCRLF() throws {
        let host = try HostFixture(["Calculator"])
        let input = "\n   \n\t\n# a comment\n   # an indented comment\r\n#calc://x-callback-url/add?lhs=9&rhs=9\n"
            + "calc://x-callback-url/add?lhs=1&rhs=1\r\n"
            + "  \tcalc://x-callback-url/add?lhs=1&rhs=2 \t\r\n"
            + "\r\n"
            + "calc://x-callback-url/add?lhs=1&rhs=3&x-success=app://ok\r\n"
            + "calc://x-callback-url/add?lhs=1&rhs=4"  // no final newline
        let url = try host.run(["-k"], input: Array(input.utf8))
        #expect(url.status == .exited(0))
        #expect(url.lines == ["success?result=2", "success?result=3", "app://ok?result=4", "success?result=5"])
        #expect(!url.stdout.contains("\r"))

        let jsonl = try host.run(["-k", "--output", "jsonl"], input: Array(input.utf8))
        let records = try jsonl.records()
        #expect(records.map(\.input) == [
            "calc://x-callback-url/add?lhs=1&rhs=1",
            "calc://x-callback-url/add?lhs=1&rhs=2",
            "calc://x-callback-url/add?lhs=1&rhs=3&x-success=app://ok",
            "calc://x-callback-url/add?lhs=1&rhs=4",
        ])
    }

    @Test("only comments and blank lines: no output, exit 0")
    func nothingToDo() throws {
        let host = try HostFixture(["Calculator"])
        let result = try host.run(lines: ["# nothing", "", "   "])
        #expect(result.status == .exited(0))
        #expect(result.stdout.isEmpty)
        let empty = try host.run(input: [])
        #expect(empty.status == .exited(0))
        #expect(empty.stdout.isEmpty)
    }

    static let outOfOrder = [
        "faulty://x-callback-url/sleep?ms=600",
        "faulty://x-callback-url/sleep?ms=10",
        "calc://x-callback-url/add?lhs=1&rhs=1",
    ]

    @Test("without --keep-order records come as requests complete: fast ones first")
    func completionOrder() throws {
        let host = try HostFixture(["Faulty", "Calculator"])
        let result = try host.run(lines: Self.outOfOrder)
        #expect(result.status == .exited(0))
        #expect(result.lines == ["success?result=2", "success?slept=10", "success?slept=600"])
    }

    @Test("with -k / --keep-order records come in input order", arguments: ["-k", "--keep-order"])
    func keepOrder(flag: String) throws {
        let host = try HostFixture(["Faulty", "Calculator"])
        let result = try host.run([flag], lines: Self.outOfOrder)
        #expect(result.status == .exited(0))
        #expect(result.lines == ["success?slept=600", "success?slept=10", "success?result=2"])
        let jsonl = try host.run([flag, "--output", "jsonl"], lines: Self.outOfOrder)
        #expect(try jsonl.records().map(\.input) == Self.outOfOrder)
    }

    @Test("a record is flushed at once, not held back waiting for more input or EOF", .scaledTimeLimit(minutes: 1))
    func flushedAtOnce() throws {
        for arguments in [[], ["-k"], ["--output", "jsonl"]] {
            let host = try HostFixture(["Calculator"])
            let child = try host.start(arguments)
            for index in 1...3 {
                child.write("calc://x-callback-url/add?lhs=\(index)&rhs=0\n")
                #expect(child.waitForStdoutLines(index, timeout: 5), "\(arguments): record \(index) not flushed; stdout: \(child.stdout)")
            }
            child.closeInput()
            #expect(child.waitForExit(timeout: 10) == .exited(0))
            #expect(child.stdoutLines.count == 3)
        }
    }

    // MARK: nothing lost

    /// What one generated line should produce.
    enum Expected: Hashable, CustomStringConvertible {
        case success([String: String])
        case error(code: String, domain: String)
        case cancel

        init(_ record: Record) {
            switch record.outcome {
            case "success": self = .success(record.params)
            case "cancel": self = .cancel
            default: self = .error(code: record.errorCode ?? "?", domain: record.errorDomain ?? "?")
            }
        }

        var description: String {
            switch self {
            case .success(let params): "success\(params.sorted { $0.key < $1.key })"
            case .error(let code, let domain): "error(\(code), \(domain))"
            case .cancel: "cancel"
            }
        }
    }

    @Test("nothing lost: ~3,000 mixed lines give exactly one record per counted line", .scaledTimeLimit(minutes: 1))
    func nothingLost() throws {
        var generator = SplitMix64(seed: 0x5EED_CA11_BAC4)
        var input: [UInt8] = []
        var expected: [Expected: Int] = [:]
        var countedInputs: [String: Int] = [:]  // inputs a jsonl record must echo
        var counted = 0
        var sequence: [Expected] = []  // in input order
        let maxLineBytes = 512

        func add(_ line: [UInt8], _ outcome: Expected?, echo: Bool = true) {
            input += line + (generator.next() % 5 == 0 ? [13, 10] : [10])
            guard let outcome else { return }
            counted += 1
            sequence.append(outcome)
            expected[outcome, default: 0] += 1
            if echo { countedInputs[String(decoding: line, as: UTF8.self), default: 0] += 1 }
        }

        let names = [1: "Bulbasaur", 4: "Charmander", 7: "Squirtle", 25: "Pikachu"]
        for index in 0..<3_000 {
            switch generator.next() % 14 {
            case 0, 1, 2:
                add(Array("calc://x-callback-url/add?lhs=\(index)&rhs=0.5".utf8), .success(["result": "\(index).5"]))
            case 3:
                add(Array("calc://x-callback-url/divide?lhs=\(index)&rhs=0&x-error=app://e".utf8),
                    .error(code: "DivisionByZero", domain: "calc"))
            case 4:
                let id = [1, 4, 7, 25][Int(generator.next() % 4)]
                add(Array("pokedex://pokemons/\(id)".utf8), .success(["name": names[id]!]))
            case 5:
                add(Array("myapp://alert/show?title=t\(index)&message=%F0%9F%98%80%20\(index)".utf8),
                    .success(["title": "t\(index)", "message": "😀 \(index)"]))
            case 6:
                add(Array("myapp://alert/show?title=t\(index)".utf8), .error(code: "ParameterError", domain: "alert"))
            case 7:
                add(Array("calc://x-callback-url/nope\(index)".utf8), .error(code: "NotFoundAction", domain: "xcallback"))
            case 8:
                add(Array("calc://x-callback-url/add?lhs=\(index)".utf8) + [0] + Array("&rhs=1".utf8),
                    .error(code: "InvalidURL", domain: "xcallback"))
            case 9:
                add(Array("calc://x-callback-url/add?lhs=".utf8) + [0xC3, 0x28] + Array("&rhs=\(index)".utf8),
                    .error(code: "InvalidURL", domain: "xcallback"), echo: false)  // echoed with U+FFFD
            case 10:
                let length = maxLineBytes + 1 + Int(generator.next() % 3000)
                add(Array(repeating: UInt8(ascii: "x"), count: length), .error(code: "InvalidURL", domain: "xcallback"),
                    echo: false)
            case 11:
                add(Array("no scheme \(index)".utf8), .error(code: "InvalidURL", domain: "xcallback"))
            case 12:
                add(Array((generator.next() % 2 == 0 ? "   " : "").utf8), nil)
            default:
                add(Array("# comment \(index)".utf8), nil)
            }
        }
        #expect(counted > 2_000)

        let host = try HostFixture()
        let result = try host.run(["--output", "jsonl", "--max-line-bytes", "\(maxLineBytes)"], input: input, timeout: 40)
        #expect(result.status == .exited(0))
        let records = try result.records()
        #expect(records.count == counted)
        var actual: [Expected: Int] = [:]
        for record in records { actual[Expected(record), default: 0] += 1 }
        #expect(actual == expected)
        if actual != expected {
            let keys = Set(actual.keys).union(expected.keys)
            let differences = keys.filter { actual[$0] != expected[$0] }.prefix(10)
                .map { "\($0): expected \(expected[$0] ?? 0), got \(actual[$0] ?? 0)" }
            Issue.record("differences: \(differences)")
        }
        var echoed: [String: Int] = [:]
        for record in records { if let input = record.input, countedInputs[input] != nil { echoed[input, default: 0] += 1 } }
        #expect(echoed == countedInputs)

        // The same input with --keep-order: the same records, in input order.
        let ordered = try host.run(["-k", "--output", "jsonl", "--max-line-bytes", "\(maxLineBytes)"], input: input, timeout: 40)
        #expect(ordered.status == .exited(0))
        let inOrder = try ordered.records().map(Expected.init)
        #expect(inOrder.count == counted)
        #expect(inOrder == sequence)
    }
}
