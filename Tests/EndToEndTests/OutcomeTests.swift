import Foundation
import Testing

/// docs/usage.md ("Error codes"): outcomes, callback URLs and both output formats.
@Suite("Outcomes and callbacks", .ownThreads)
struct OutcomeTests {
    static let divideByZero = errorLine(code: "DivisionByZero", message: "cannot divide by zero", domain: "calc")
    static let failed = errorLine(code: "Failed", message: "the faulty plug-in failed on purpose", domain: "faulty")

    @Test("each outcome goes to its own callback URL (url format)")
    func outcomesWithCallbacksURL() throws {
        let host = try HostFixture()
        let result = try host.run(["-k"], lines: [
            "calc://x-callback-url/add?lhs=2&rhs=4.2&x-success=app://ok",
            "calc://x-callback-url/divide?lhs=1&rhs=0&x-success=app://ok&x-error=app://err",
            "faulty://x-callback-url/cancel?x-success=app://ok&x-error=app://err&x-cancel=app://cancelled",
            "faulty://x-callback-url/fail?x-error=other://failed/path",
        ])
        #expect(result.status == .exited(0))
        #expect(result.lines == [
            "app://ok?result=6.2",
            "app://err?" + Self.divideByZero.dropFirst("error?".count),
            "app://cancelled",
            "other://failed/path?" + Self.failed.dropFirst("error?".count),
        ])
    }

    @Test("without a callback for its outcome a record is success?…, error?… or cancel (url format)")
    func fallbackLinesURL() throws {
        let host = try HostFixture()
        let result = try host.run(["-k"], lines: [
            "calc://x-callback-url/add?lhs=2&rhs=4.2",
            "calc://x-callback-url/divide?lhs=1&rhs=0",
            "faulty://x-callback-url/cancel",
            "faulty://x-callback-url/noise",
            // A callback for another outcome is not used.
            "calc://x-callback-url/divide?lhs=1&rhs=0&x-success=app://ok&x-cancel=app://c",
            "faulty://x-callback-url/cancel?x-success=app://ok&x-error=app://err",
            "calc://x-callback-url/multiply?lhs=3&rhs=-2&x-error=app://err",
        ])
        #expect(result.status == .exited(0))
        #expect(result.lines == [
            "success?result=6.2",
            Self.divideByZero,
            "cancel",
            "success",
            Self.divideByZero,
            "cancel",
            "success?result=-6",
        ])
    }

    @Test("jsonl records carry input, outcome, decoded params and the full callback")
    func outcomesJSONL() throws {
        let host = try HostFixture()
        let inputs = [
            "calc://x-callback-url/add?lhs=2&rhs=4.2&x-success=app://ok",
            "calc://x-callback-url/divide?lhs=1&rhs=0&x-error=app://err",
            "faulty://x-callback-url/cancel?x-cancel=app://cancelled",
            "calc://x-callback-url/subtract?lhs=2&rhs=4.5",
            "faulty://x-callback-url/fail",
            "faulty://x-callback-url/cancel",
        ]
        let result = try host.run(["-k", "--output", "jsonl"], lines: inputs)
        #expect(result.status == .exited(0))
        let records = try result.records()
        try #require(records.count == inputs.count)
        #expect(records.map(\.input) == inputs)
        #expect(records.map(\.outcome) == ["success", "error", "cancel", "success", "error", "cancel"])

        #expect(records[0].params == ["result": "6.2"])
        #expect(records[0].callback == "app://ok?result=6.2")

        #expect(records[1].params == ["errorCode": "DivisionByZero", "errorMessage": "cannot divide by zero",
                                      "errorDomain": "calc"])
        #expect(records[1].callback == "app://err?" + Self.divideByZero.dropFirst("error?".count))

        #expect(records[2].params == [:])
        #expect(records[2].callback == "app://cancelled")

        #expect(records[3].params == ["result": "-2.5"])
        #expect(records[3].callback == nil)

        #expect(records[4].params == ["errorCode": "Failed", "errorMessage": "the faulty plug-in failed on purpose",
                                      "errorDomain": "faulty"])
        #expect(records[4].callback == nil)
        #expect(records[5].callback == nil)
    }

    // MARK: encoding

    static let awkwardTitle = "a&b=c+d#e 😀"
    static let awkwardTitleEncoded = "a%26b%3Dc%2Bd%23e%20%F0%9F%98%80"

    @Test("awkward values come back percent-encoded in url format, never injecting a parameter")
    func awkwardValuesURL() throws {
        let host = try HostFixture()
        let result = try host.run(["-k"], lines: [
            "myapp://alert/show?title=\(Self.awkwardTitleEncoded)&message=h%C3%A9llo%20w%C3%B6rld",
            "myapp://alert/show?title=\(Self.awkwardTitleEncoded)&message=x%26injected%3Dyes&x-success=app://ok",
            // `+` is a literal plus; unreserved bytes stay literal.
            "myapp://alert/show?title=1+1&message=A-z_0.9~",
            "myapp://alert/show?title=%E4%BD%A0%E5%A5%BD&message=%22quoted%22%20%2F%20%3F%20%25",
        ])
        #expect(result.status == .exited(0))
        #expect(result.lines == [
            "success?title=\(Self.awkwardTitleEncoded)&message=h%C3%A9llo%20w%C3%B6rld",
            "app://ok?title=\(Self.awkwardTitleEncoded)&message=x%26injected%3Dyes",
            "success?title=1%2B1&message=A-z_0.9~",
            "success?title=%E4%BD%A0%E5%A5%BD&message=%22quoted%22%20%2F%20%3F%20%25",
        ])
        // Decoding the records gives exactly two parameters each.
        for line in result.lines {
            #expect(recordParameters(line).map(\.name) == ["title", "message"])
        }
        #expect(recordParameters(result.lines[1]).map(\.value) == [Self.awkwardTitle, "x&injected=yes"])
    }

    @Test("awkward values come back decoded in jsonl, and encoded in its callback")
    func awkwardValuesJSONL() throws {
        let host = try HostFixture()
        let result = try host.run(["-k", "--output", "jsonl"], lines: [
            "myapp://alert/show?title=\(Self.awkwardTitleEncoded)&message=h%C3%A9llo%20w%C3%B6rld",
            "myapp://alert/show?title=\(Self.awkwardTitleEncoded)&message=1+1&x-success=app://ok",
            #"myapp://alert/show?title=%22q%22%5C&message=tab%09nl%0A"#,
        ])
        #expect(result.status == .exited(0))
        let records = try result.records()
        try #require(records.count == 3)
        #expect(records[0].params == ["title": Self.awkwardTitle, "message": "héllo wörld"])
        #expect(records[0].callback == nil)
        #expect(records[1].params == ["title": Self.awkwardTitle, "message": "1+1"])
        #expect(records[1].callback == "app://ok?title=\(Self.awkwardTitleEncoded)&message=1%2B1")
        // JSON escaping of quotes, backslashes and control characters.
        #expect(records[2].params == ["title": "\"q\"\\", "message": "tab\tnl\n"])
    }

    @Test("a calculator label is part of the value, encoded: result=LABEL%3DVALUE")
    func calculatorLabel() throws {
        let host = try HostFixture()
        let url = try host.run(["-k"], lines: [
            "calc://x-callback-url/add?lhs=2&rhs=4.2&text=result",
            "calc://x-callback-url/add?lhs=1&rhs=2&text=a%20b%26c",
        ])
        #expect(url.lines == ["success?result=result%3D6.2", "success?result=a%20b%26c%3D3"])
        let jsonl = try host.run(["--output", "jsonl"], lines: ["calc://x-callback-url/add?lhs=1&rhs=2&text=a%20b%26c"])
        #expect(try jsonl.records().first?.params == ["result": "a b&c=3"])
    }

    @Test("outcome parameters join a callback's own query with & and go before its #fragment")
    func callbackQueryAndFragment() throws {
        let host = try HostFixture()
        let inputs = [
            // x-success = app://ok?q=1#frag
            "calc://x-callback-url/add?lhs=1&rhs=2&x-success=app%3A%2F%2Fok%3Fq%3D1%23frag",
            // x-success = app://ok#top (no query of its own)
            "calc://x-callback-url/add?lhs=1&rhs=2&x-success=app%3A%2F%2Fok%23top",
            // x-error = app://e?a=b&c=d (its own & encoded in the request)
            "calc://x-callback-url/divide?lhs=1&rhs=0&x-error=app%3A%2F%2Fe%3Fa%3Db%26c%3Dd",
            // an empty query, a query ending in &, an empty query before a fragment
            "calc://x-callback-url/add?lhs=1&rhs=2&x-success=app%3A%2F%2Fok%3F",
            "calc://x-callback-url/add?lhs=1&rhs=2&x-success=app%3A%2F%2Fok%3Fa%26",
            "calc://x-callback-url/add?lhs=1&rhs=2&x-success=app%3A%2F%2Fok%3F%23f",
        ]
        let expected = [
            "app://ok?q=1&result=3#frag",
            "app://ok?result=3#top",
            "app://e?a=b&c=d&" + Self.divideByZero.dropFirst("error?".count),
            "app://ok?result=3",
            "app://ok?a&result=3",
            "app://ok?result=3#f",
        ]
        let url = try host.run(["-k"], lines: inputs)
        #expect(url.status == .exited(0))
        #expect(url.lines == expected)

        let jsonl = try host.run(["-k", "--output", "jsonl"], lines: inputs)
        let records = try jsonl.records()
        #expect(records.map(\.callback) == expected)
        #expect(records.first?.params == ["result": "3"])
    }

    @Test("typed routes: Int argument, enumeration and list parameters (Pokedex)")
    func pokedex() throws {
        let host = try HostFixture(["Pokedex"])
        let result = try host.run(["-k", "--output", "jsonl"], lines: [
            "pokedex://pokemons/25",
            "pokedex://pokemons/1?x-success=app://ok",
            "pokedex://pokemons/9999",
            "pokedex://pokemons/abc",
            "pokedex://pokemons?type=fire",
            "pokedex://pokemons?types=grass,poison",
            "pokedex://pokemons?type=plasma",
        ])
        #expect(result.status == .exited(0))
        let records = try result.records()
        try #require(records.count == 7)
        #expect(records[0].params == ["name": "Pikachu"])
        #expect(records[1].callback == "app://ok?name=Bulbasaur")
        #expect(records[2].outcome == "error")
        #expect(records[2].errorCode == "NotFound")
        #expect(records[2].errorDomain == "pokedex")
        #expect(records[3].errorCode == "ParameterError")
        #expect(records[3].errorDomain == "pokedex")
        let fire = records[4].params["names"]?.split(separator: ",").map(String.init) ?? []
        #expect(fire.contains("Charmander"))
        #expect(!fire.contains("Squirtle"))
        let grassPoison = records[5].params["names"]?.split(separator: ",").map(String.init) ?? []
        #expect(grassPoison.contains("Bulbasaur"))
        #expect(!grassPoison.contains("Charmander"))
        #expect(records[6].errorCode == "ParameterError")
        #expect(records[6].errorDomain == "pokedex")
    }

    @Test("scheme and x-callback-url host are case-insensitive; the path is not")
    func caseSensitivity() throws {
        let host = try HostFixture(["Calculator"])
        let result = try host.run(["-k"], lines: [
            "CALC://X-Callback-URL/add?lhs=1&rhs=1",
            "calc://x-callback-url/Add?lhs=1&rhs=1",
            "calc://x-callback-url/add?LHS=1&rhs=1",
        ])
        #expect(result.lines.count == 3)
        #expect(result.lines.first == "success?result=2")
        #expect(result.lines.dropFirst().first?.hasPrefix("error?errorCode=NotFoundAction&") == true)
        #expect(result.lines.last?.hasPrefix("error?errorCode=ParameterError&") == true)
    }
}
