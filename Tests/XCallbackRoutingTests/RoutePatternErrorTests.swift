import Testing
@testable import XCallbackRouting

/// Every malformed pattern names the byte where it went wrong and what was expected there.
@Suite struct RoutePatternErrorTests {
    struct Case: Sendable, CustomStringConvertible {
        var pattern: String
        var offset: Int
        var kind: RoutePatternError.Kind
        var message: String
        var description: String { pattern }
    }

    static let cases: [Case] = [
        Case(pattern: "", offset: 0, kind: .missingSchemeSeparator,
             message: "expected '://' after the scheme, as in 'calc://x-callback-url/add' at byte 0"),
        Case(pattern: "calc", offset: 4, kind: .missingSchemeSeparator,
             message: "expected '://' after the scheme, as in 'calc://x-callback-url/add' at byte 4"),
        Case(pattern: "calc/x-callback-url/add", offset: 4, kind: .missingSchemeSeparator,
             message: "expected '://' after the scheme, as in 'calc://x-callback-url/add' at byte 4"),
        Case(pattern: "calc:/x", offset: 5, kind: .missingSchemeSeparator,
             message: "expected '//' after 'calc:' at byte 5"),
        Case(pattern: "calc:", offset: 5, kind: .missingSchemeSeparator,
             message: "expected '//' after 'calc:' at byte 5"),
        Case(pattern: "://x-callback-url/add", offset: 0, kind: .emptyScheme,
             message: "empty scheme: expected a scheme name before '://' at byte 0"),
        Case(pattern: "2calc://x", offset: 0, kind: .invalidSchemeCharacter,
             message: "a scheme must start with a letter, not '2' at byte 0"),
        Case(pattern: "ca_lc://x", offset: 2, kind: .invalidSchemeCharacter,
             message: "invalid character '_' in scheme; a scheme is letters, digits, '+', '-' and '.' at byte 2"),
        Case(pattern: "calc:///add", offset: 7, kind: .missingHost,
             message: "expected a host after '://' (a name, ':name' or '*'; the scheme's root route is 'calc://' alone) at byte 7"),
        Case(pattern: "a://(/b)", offset: 4, kind: .missingHost,
             message: "expected a host after '://' (a name, ':name' or '*'; the scheme's root route is 'a://' alone) at byte 4"),
        Case(pattern: "a://b//c", offset: 6, kind: .emptySegment,
             message: "empty segment: expected a name, ':name' or '*' after '/' at byte 6"),
        Case(pattern: "a://b/c/", offset: 8, kind: .emptySegment,
             message: "empty segment: expected a name, ':name' or '*' after '/' at byte 8"),
        Case(pattern: "a://b/:", offset: 7, kind: .emptyArgumentName,
             message: "expected an argument name after ':' at byte 7"),
        Case(pattern: "a://b/:/c", offset: 7, kind: .emptyArgumentName,
             message: "expected an argument name after ':' at byte 7"),
        Case(pattern: "a://b/:.x", offset: 7, kind: .emptyArgumentName,
             message: "invalid character '.' in argument name; a name is letters, digits, '_' and '-' at byte 7"),
        Case(pattern: "a://b/:id.json", offset: 9, kind: .invalidArgumentName,
             message: "invalid character '.' in argument name; a name is letters, digits, '_' and '-' at byte 9"),
        Case(pattern: "a://b/:idé", offset: 9, kind: .invalidArgumentName,
             message: "invalid character 'é' in argument name; a name is letters, digits, '_' and '-' at byte 9"),
        Case(pattern: "a://b/:id/c/:id", offset: 12, kind: .duplicateArgumentName,
             message: "duplicate argument name ':id'; each argument needs its own name at byte 12"),
        Case(pattern: "a://:x/c(/:x)", offset: 10, kind: .duplicateArgumentName,
             message: "duplicate argument name ':x'; each argument needs its own name at byte 10"),
        Case(pattern: "a://b/*/c", offset: 6, kind: .misplacedWildcard,
             message: "'*' must be the last segment; nothing may follow it at byte 6"),
        Case(pattern: "a://*/c", offset: 4, kind: .misplacedWildcard,
             message: "'*' must be the last segment; nothing may follow it at byte 4"),
        Case(pattern: "a://b/*(/c)", offset: 6, kind: .misplacedWildcard,
             message: "'*' must be the last segment; nothing may follow it at byte 6"),
        Case(pattern: "a://b(/*)/c", offset: 7, kind: .misplacedWildcard,
             message: "'*' must be the last segment; nothing may follow it at byte 7"),
        Case(pattern: "a://b/*x", offset: 6, kind: .misplacedWildcard,
             message: "'*' must be a whole segment of its own at byte 6"),
        Case(pattern: "a://b/x*", offset: 7, kind: .misplacedWildcard,
             message: "'*' is only allowed as a whole segment, and only as the last one (write '%2A' for a literal '*') at byte 7"),
        Case(pattern: "a://b(/c", offset: 8, kind: .unbalancedParenthesis,
             message: "expected ')' to close the '(' at byte 5 at byte 8"),
        Case(pattern: "a://b(/c(/d)", offset: 12, kind: .unbalancedParenthesis,
             message: "expected ')' to close the '(' at byte 5 at byte 12"),
        Case(pattern: "a://b/c)", offset: 7, kind: .unbalancedParenthesis,
             message: "unbalanced ')': there is no '(' to close at byte 7"),
        Case(pattern: "a://b()", offset: 6, kind: .emptyGroup,
             message: "expected '/' after '(': an optional group holds whole segments, as in '(/:id)' at byte 6"),
        Case(pattern: "a://b/c(:x)", offset: 8, kind: .emptyGroup,
             message: "expected '/' after '(': an optional group holds whole segments, as in '(/:id)' at byte 8"),
        Case(pattern: "a://b(/)", offset: 7, kind: .emptySegment,
             message: "empty segment: expected a name, ':name' or '*' after '/' at byte 7"),
        Case(pattern: "a://b/c?x=1", offset: 7, kind: .invalidCharacter,
             message: "unexpected '?': a pattern matches the host and path only, not the query or fragment at byte 7"),
        Case(pattern: "a://b/c#top", offset: 7, kind: .invalidCharacter,
             message: "unexpected '#': a pattern matches the host and path only, not the query or fragment at byte 7"),
        Case(pattern: "a://b/c d", offset: 7, kind: .invalidCharacter,
             message: "unexpected space (write '%20' for a literal space) at byte 7"),
        Case(pattern: "a://b/c\t", offset: 7, kind: .invalidCharacter,
             message: "unexpected control character U+0009 at byte 7"),
        Case(pattern: "a://b/%zz", offset: 6, kind: .malformedPercentEscape,
             message: "'%' must be followed by two hex digits at byte 6"),
        Case(pattern: "a://b/c%2", offset: 7, kind: .malformedPercentEscape,
             message: "'%' must be followed by two hex digits at byte 7"),
        Case(pattern: "a://b/x%FF", offset: 6, kind: .malformedPercentEscape,
             message: "percent escapes in this segment decode to invalid UTF-8 at byte 6"),
        Case(pattern: "a://b(/c)(/d)(/e)(/f)(/g)(/h)(/i)(/j)(/k)", offset: 5, kind: .tooManyAlternatives,
             message: "optional groups expand to more than 256 alternatives at byte 5"),
    ]

    @Test(arguments: cases)
    func malformedPattern(_ expected: Case) {
        let error = #expect(throws: RoutePatternError.self) {
            try RoutePattern(expected.pattern)
        }
        #expect(error == RoutePatternError(
            pattern: expected.pattern, offset: expected.offset, kind: expected.kind, message: expected.message))
    }

    @Test func descriptionQuotesThePattern() {
        let error = #expect(throws: RoutePatternError.self) { try RoutePattern("a://b/*/c") }
        #expect(error?.description == "invalid route pattern 'a://b/*/c': '*' must be the last segment; nothing may follow it at byte 6")
    }

    @Test func eightGroupsAreStillAccepted() throws {
        let pattern = try RoutePattern("a://b(/c)(/d)(/e)(/f)(/g)(/h)(/i)(/j)")
        #expect(pattern.alternatives.count == 256)
    }
}
