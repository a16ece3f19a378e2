import Testing
import XCallbackURL

/// Where outcome parameters join a callback's query. (The '?' case was found by the
/// `callback-encoder` fuzz target.)
@Suite struct CallbackJoiningTests {
    @Test func aQuestionMarkInsideTheQueryIsPartOfTheLastValue() throws {
        let line = CallbackURL.appending([QueryParameter("result", "6")], to: "app://ok?q=why?")
        #expect(line == "app://ok?q=why?&result=6")
        #expect(Array(try RequestURL(parsing: line).parameters) == [QueryParameter("q", "why?"), QueryParameter("result", "6")])
    }

    @Test func anEmptyQueryOrATrailingAmpersandGetsNoSecondSeparator() {
        #expect(CallbackURL.appending([QueryParameter("r", "1")], to: "app://ok?") == "app://ok?r=1")
        #expect(CallbackURL.appending([QueryParameter("r", "1")], to: "app://ok?a=1&") == "app://ok?a=1&r=1")
        #expect(CallbackURL.appending([QueryParameter("r", "1")], to: "app://ok??#f") == "app://ok??&r=1#f")
    }
}
