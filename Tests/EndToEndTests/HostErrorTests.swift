import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/usage.md ("Error codes"): the host's own error codes that apply without isolation.
@Suite("Host error codes", .ownThreads)
struct HostErrorTests {
    // MARK: InvalidURL

    /// Lines that are not URLs, each followed by a good line: reading goes on.
    static let invalidLines: [(label: String, bytes: [UInt8])] = [
        ("no scheme", Array("just some words".utf8)),
        ("no scheme, only a path", Array("/x-callback-url/add?lhs=1&rhs=2".utf8)),
        ("NUL byte", Array("calc://x-callback-url/add?lhs=1".utf8) + [0] + Array("&rhs=2".utf8)),
        ("invalid UTF-8", Array("calc://x-callback-url/add?lhs=".utf8) + [0xFF, 0xFE] + Array("&rhs=2".utf8)),
        ("truncated UTF-8 sequence", Array("calc://x-callback-url/add?lhs=".utf8) + [0xE2, 0x82] + Array("&rhs=2".utf8)),
        ("overlong UTF-8 encoding", Array("calc://x-callback-url/add?lhs=".utf8) + [0xC0, 0xAF] + Array("&rhs=2".utf8)),
        ("over-long line", Array("calc://x-callback-url/add?lhs=1&rhs=2&pad=".utf8) + Array(repeating: UInt8(ascii: "a"), count: 200)),
    ]

    static func invalidInput() -> [UInt8] {
        var input: [UInt8] = []
        for (index, line) in invalidLines.enumerated() {
            input += line.bytes + [UInt8(ascii: "\n")]
            input += Array("calc://x-callback-url/add?lhs=\(index)&rhs=1000\n".utf8)
        }
        return input
    }

    @Test("InvalidURL: no scheme, NUL byte, invalid UTF-8, over-long line (url format); reading goes on")
    func invalidURLs() throws {
        let host = try HostFixture(["Calculator"])
        let result = try host.run(["-k", "--max-line-bytes", "128"], input: Self.invalidInput())
        #expect(result.status == .exited(0))
        try #require(result.lines.count == Self.invalidLines.count * 2, "\(result.lines)")
        for (index, line) in Self.invalidLines.enumerated() {
            let record = result.lines[2 * index]
            #expect(record.hasPrefix("error?errorCode=InvalidURL&errorMessage="), "\(line.label): \(record)")
            #expect(record.hasSuffix("&errorDomain=xcallback"), "\(line.label): \(record)")
            #expect(recordParameters(record).map(\.name) == ["errorCode", "errorMessage", "errorDomain"], "\(line.label)")
            #expect(result.lines[2 * index + 1] == "success?result=\(1000 + index)", "after \(line.label)")
        }
    }

    @Test("InvalidURL in jsonl: valid JSON even for NUL bytes and invalid UTF-8")
    func invalidURLsJSONL() throws {
        let host = try HostFixture(["Calculator"])
        let result = try host.run(["-k", "--output", "jsonl", "--max-line-bytes", "128"], input: Self.invalidInput())
        #expect(result.status == .exited(0))
        let records = try result.records()
        try #require(records.count == Self.invalidLines.count * 2)
        for (index, line) in Self.invalidLines.enumerated() {
            let record = records[2 * index]
            #expect(record.outcome == "error", "\(line.label)")
            #expect(record.errorCode == "InvalidURL", "\(line.label)")
            #expect(record.errorDomain == "xcallback", "\(line.label)")
            #expect(record.params[ErrorField.message]?.isEmpty == false, "\(line.label)")
            #expect(record.callback == nil, "\(line.label)")
            #expect(records[2 * index + 1].params == ["result": "\(1000 + index)"], "after \(line.label)")
        }
        // The NUL byte survives into `input` as \u0000.
        #expect(records[4].input == "calc://x-callback-url/add?lhs=1\u{0}&rhs=2")
        #expect(records[0].input == "just some words")
    }

    @Test("a line far past the default 64 KiB limit is one InvalidURL, and the next line is read")
    func hugeLineDefaultLimit() throws {
        let host = try HostFixture(["Calculator"])
        var input = Array("calc://x-callback-url/add?lhs=1&rhs=2&x-success=app://ok&pad=".utf8)
        input += Array(repeating: UInt8(ascii: "b"), count: 300_000)
        input += Array("\ncalc://x-callback-url/add?lhs=2&rhs=2\n".utf8)
        // Exactly at the limit is fine: 65,536 bytes.
        let prefix = Array("calc://x-callback-url/add?lhs=3&rhs=2&pad=".utf8)
        input += prefix + Array(repeating: UInt8(ascii: "c"), count: 65_536 - prefix.count) + [UInt8(ascii: "\n")]
        let result = try host.run(["-k"], input: input)
        #expect(result.status == .exited(0))
        try #require(result.lines.count == 3, "\(result.lines.map { $0.prefix(100) })")
        #expect(result.lines[0].hasPrefix("error?errorCode=InvalidURL&"))
        #expect(result.lines[1] == "success?result=4")
        #expect(result.lines[2] == "success?result=5")
    }

    // MARK: NotFoundAction, ParameterError

    @Test("NotFoundAction for unknown schemes and actions")
    func notFound() throws {
        let host = try HostFixture(["Calculator"])
        let result = try host.run(["-k", "--output", "jsonl"], lines: [
            "nobody://x-callback-url/add?lhs=1&rhs=2",
            "calc://x-callback-url/power?lhs=1&rhs=2&x-error=app://err",
            "calc://x-callback-url/add/extra?lhs=1&rhs=2",
            "myapp://alert/show?title=a&message=b",  // Alert is not loaded here
        ])
        #expect(result.status == .exited(0))
        let records = try result.records()
        #expect(records.count == 4)
        for record in records {
            #expect(record.outcome == "error")
            #expect(record.errorCode == "NotFoundAction", "\(record)")
            #expect(record.errorDomain == "xcallback")
        }
        #expect(records.dropFirst().first?.callback?.hasPrefix("app://err?errorCode=NotFoundAction&") == true)
    }

    @Test("ParameterError: in the domain of the plug-in that found it, whether the Swift kit's typed bindings or C code")
    func parameterErrors() throws {
        let host = try HostFixture()
        let result = try host.run(["-k", "--output", "jsonl"], lines: [
            "calc://x-callback-url/add?lhs=x&rhs=1",
            "calc://x-callback-url/add?lhs=1",
            "calc://x-callback-url/divide?lhs=&rhs=1",
            "pokedex://pokemons/abc",
            "myapp://alert/show?title=a",
            "myapp://alert/show?message=b",
            "faulty://x-callback-url/sleep?ms=soon",
        ])
        #expect(result.status == .exited(0))
        let records = try result.records()
        try #require(records.count == 7)
        #expect(records.map(\.errorCode) == Array(repeating: "ParameterError", count: 7))
        #expect(records.map(\.errorDomain) == ["calculator", "calculator", "calculator", "pokedex", "alert", "alert", "faulty"])
        #expect(records[4].params[ErrorField.message]?.contains("message") == true)
    }

    // MARK: Timeout

    @Test("Timeout: `never` and `hang` are answered after --timeout, other requests go on, and EOF ends the host",
          .scaledTimeLimit(minutes: 1))
    func timeouts() throws {
        let host = try HostFixture(["Faulty", "Calculator"])
        let child = try host.start(["--timeout", "1", "--output", "jsonl"])
        let start = Date()
        child.write("faulty://x-callback-url/never\nfaulty://x-callback-url/hang?x-error=app://late\n")
        child.write("calc://x-callback-url/add?lhs=1&rhs=1\n")
        // stdin stays open: the records must not wait for EOF.
        #expect(child.waitForStdoutLines(3, timeout: 8), "stdout so far: \(child.stdout)")
        let answered = Date().timeIntervalSince(start)
        #expect(answered >= 0.9 && answered < 6, "answered after \(answered) s")
        // The host still serves while a thread is stuck in `hang`.
        child.write("calc://x-callback-url/add?lhs=2&rhs=2\n")
        #expect(child.waitForStdoutLines(4, timeout: 5))
        child.closeInput()
        let status = child.waitForExit(timeout: 10)
        #expect(status == .exited(0))

        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        try #require(records.count == 4)
        #expect(records.first?.params == ["result": "2"])  // fast one first
        #expect(records.last?.params == ["result": "4"])
        let timeouts = records.filter { $0.errorCode == "Timeout" }
        #expect(timeouts.count == 2)
        #expect(timeouts.allSatisfy { $0.errorDomain == "xcallback" })
        let hang = timeouts.first { $0.input?.contains("hang") == true }
        #expect(hang?.callback?.hasPrefix("app://late?errorCode=Timeout&") == true)
        #expect(!looksLikeACrash(child.stderr))
    }

    @Test("a handler finishing after its Timeout does not produce a second record")
    func lateCompletionIgnored() throws {
        let host = try HostFixture(["Faulty"])
        // sleep 1500 ms with a 1 s timeout: Timeout, then the late completion
        // must be dropped. The second request keeps the host alive past 1.5 s.
        let result = try host.run(["--timeout", "1", "-k"], lines: [
            "faulty://x-callback-url/sleep?ms=1500",
            "faulty://x-callback-url/sleep?ms=1900",
        ])
        #expect(result.status == .exited(0))
        #expect(result.lines.count == 2)
        #expect(result.lines.allSatisfy { $0.hasPrefix("error?errorCode=Timeout&") }, "\(result.lines)")
    }

    @Test("a plug-in that never completes what it keeps is named once it holds 1,024 requests past their Timeout")
    func heldPastTimeoutIsNamed() throws {
        let host = try HostFixture(["Faulty"])
        // Kept, not freed: the header promises a request stays valid until
        // its plug-in completes it. The host says so, once at 1,024.
        let result = try host.run(["--timeout", "0.05"],
                                  lines: Array(repeating: "faulty://x-callback-url/never", count: 1_100), timeout: 60)
        #expect(result.status == .exited(0), "\(result.stderr.suffix(2_000))")
        #expect(result.lines.count == 1_100)
        #expect(result.lines.allSatisfy { $0.hasPrefix("error?errorCode=Timeout&") })
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("requests past their Timeout") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("plug-in 'faulty' holds 1024 requests") == true, "\(warnings)")
    }

    // MARK: LoopDetected

    /// A chain of `hops` calc requests, each the x-success of the one before
    /// (nested percent-encoding), the last one calling back app://done.
    static func chain(_ count: Int) -> String {
        var url = "app://done"
        for index in 0..<count {
            let encoded = url.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "&", with: "%26")
            url = "calc://x-callback-url/add?lhs=\(index)&rhs=1&x-success=" + encoded
        }
        return url
    }

    @Test("a callback chain through the host's own routes: 8 hops end in the last outcome, 9 in LoopDetected")
    func loopDetected() throws {
        let host = try HostFixture(["Calculator", "Faulty"])
        let inputs = [
            Self.chain(9),  // 8 internal hops
            Self.chain(10), // 9 internal hops
            // An error outcome followed into another plug-in's route.
            "faulty://x-callback-url/fail?x-error=calc%3A%2F%2Fx-callback-url%2Fadd%3Flhs%3D1%26rhs%3D2%26x-success%3Dapp%3A%2F%2Fend",
            // Scheme case does not matter for "own route".
            "calc://x-callback-url/add?lhs=1&rhs=1&x-success=CALC%3A%2F%2Fx-callback-url%2Fmultiply%3Flhs%3D3%26rhs%3D3",
        ]
        let result = try host.run(["-k", "--output", "jsonl"], lines: inputs)
        #expect(result.status == .exited(0))
        let records = try result.records()
        try #require(records.count == 4, "\(result.lines)")
        #expect(records.map(\.input) == inputs)

        #expect(records[0].outcome == "success")
        #expect(records[0].params == ["result": "1"])  // the last hop: lhs=0 + rhs=1
        #expect(records[0].callback == "app://done?result=1")

        #expect(records[1].outcome == "error")
        #expect(records[1].errorCode == "LoopDetected")
        #expect(records[1].errorDomain == "xcallback")

        #expect(records[2].outcome == "success")
        #expect(records[2].params == ["result": "3"])
        #expect(records[2].callback == "app://end?result=3")

        #expect(records[3].params == ["result": "9"])

        let url = try host.run(["-k"], lines: [Self.chain(12)])
        #expect(url.lines.count == 1)
        #expect(url.lines.first?.hasPrefix("error?errorCode=LoopDetected&") == true)
    }
}
