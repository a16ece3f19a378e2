import Testing
import XCallbackURL

@Suite struct OutcomeTests {
    @Test func successWithoutCallback() {
        #expect(Outcome.success([QueryParameter("result", "6.2")]).line(callback: nil) == "success?result=6.2")
        #expect(Outcome.success().line(callback: nil) == "success")
        #expect(Outcome.cancel.line(callback: nil) == "cancel")
        #expect(Outcome.cancel.kind == .cancel)
        #expect(Outcome.cancel.parameters.isEmpty)
    }

    @Test func errorParametersInOrder() {
        let outcome = Outcome.error(code: "NotFoundAction", message: "no route for calc://x-callback-url/pow", domain: "xcallback")
        #expect(outcome.kind == .error)
        #expect(outcome.parameters.map(\.name) == ["errorCode", "errorMessage", "errorDomain"])
        #expect(outcome.line(callback: nil)
            == "error?errorCode=NotFoundAction&errorMessage=no%20route%20for%20calc%3A%2F%2Fx-callback-url%2Fpow&errorDomain=xcallback")
        #expect(outcome.value("errorDomain") == "xcallback")
    }

    @Test func appendsToCallbacks() {
        let result = Outcome.success([QueryParameter("result", "result=6.2")])
        #expect(result.line(callback: "app://ok") == "app://ok?result=result%3D6.2")
        #expect(result.line(callback: "app://ok?a=1") == "app://ok?a=1&result=result%3D6.2")
        #expect(result.line(callback: "app://ok?a=1#top") == "app://ok?a=1&result=result%3D6.2#top")
        #expect(result.line(callback: "app://ok#frag?x=1") == "app://ok?result=result%3D6.2#frag?x=1")
        #expect(result.line(callback: "app://ok?") == "app://ok?result=result%3D6.2")
        #expect(result.line(callback: "app://ok?a=1&") == "app://ok?a=1&result=result%3D6.2")
        #expect(Outcome.cancel.line(callback: "app://c?x=1#f") == "app://c?x=1#f")
    }

    @Test func emptyCallbackIsNoCallback() {
        #expect(Outcome.success([QueryParameter("a", "1")]).line(callback: "") == "success?a=1")
    }

    @Test func appendLineMatchesLine() {
        let outcomes: [Outcome] = [
            .success([QueryParameter("result", "6.2"), QueryParameter("名", "a b&c=d+e")]),
            .error(code: "Timeout", message: "took longer than 30 s", domain: "xcallback"),
            .cancel,
            .success(),
        ]
        for outcome in outcomes {
            for callback in [nil, "", "app://ok", "app://ok?x=1#f", "app://ok?"] as [String?] {
                var bytes = Array("prefix ".utf8)
                outcome.appendLine(callback: callback, to: &bytes)
                #expect(String(decoding: bytes, as: UTF8.self) == "prefix " + outcome.line(callback: callback))
            }
        }
    }

    @Test func valuesCannotInjectParameters() throws {
        let outcome = Outcome.success([QueryParameter("result", "1&x-success=evil://&errorCode=x#y")])
        let line = outcome.line(callback: "app://ok")
        #expect(line == "app://ok?result=1%26x-success%3Devil%3A%2F%2F%26errorCode%3Dx%23y")
        let parsed = try RequestURL(parsing: line)
        #expect(Array(parsed.parameters) == outcome.parameters)
        #expect(parsed.successURL == nil)
        #expect(parsed.fragment == nil)
    }

    @Test func hostErrors() {
        let parse = URLParseError(kind: .missingScheme, offset: 0, message: "missing scheme")
        #expect(Outcome.invalidURL(parse) == .error(code: "InvalidURL", message: "missing scheme", domain: "xcallback"))
        let parameter = ParameterError(name: "lhs", expected: "a decimal number", problem: .missing)
        #expect(Outcome.parameterError(parameter)
            == .error(code: "ParameterError", message: "missing required parameter 'lhs'", domain: "xcallback"))
    }

    @Test func callbackURLAppending() {
        #expect(CallbackURL.appending([], to: "app://x#f") == "app://x#f")
        #expect(CallbackURL.appending([QueryParameter("a b", "c d")], to: "app://x") == "app://x?a%20b=c%20d")
        #expect(CallbackURL.appending([QueryParameter("a", "1"), QueryParameter("b", "")], to: "app:x?y#") == "app:x?y&a=1&b=#")
        #expect(CallbackURL.appending([QueryParameter("a", "1")], to: "#f") == "?a=1#f")
    }

    @Test func outcomeKindNames() {
        #expect(OutcomeKind.allCases.map(\.rawValue) == ["success", "error", "cancel"])
    }
}
