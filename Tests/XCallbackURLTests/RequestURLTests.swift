import Testing
import XCallbackURL

@Suite struct RequestURLParsing {
    @Test func parsesAnXCallbackURL() throws {
        let url = try RequestURL(parsing: "calc://x-callback-url/add?lhs=2&rhs=4.2&x-success=app://ok&x-source=Shortcuts")
        #expect(url.scheme == "calc")
        #expect(url.host == "x-callback-url")
        #expect(url.isXCallbackURL)
        #expect(url.pathSegments == ["add"])
        #expect(url.parameters == [QueryParameter("lhs", "2"), QueryParameter("rhs", "4.2")])
        #expect(url.successURL == "app://ok")
        #expect(url.source == "Shortcuts")
        #expect(url.errorURL == nil)
        #expect(url.cancelURL == nil)
        #expect(url.fragment == nil)
    }

    @Test func parsesControllerStyleURLs() throws {
        let url = try RequestURL(parsing: "myapp://alert/show?title=Hi&message=Yo")
        #expect(url.host == "alert")
        #expect(!url.isXCallbackURL)
        #expect(url.pathSegments == ["show"])
        #expect(url.parameters.first("title") == "Hi")
        #expect(url.parameters.first("message") == "Yo")
    }

    @Test func lowercasesSchemeAndTheXCallbackHostOnly() throws {
        let url = try RequestURL(parsing: "CaLc://X-Callback-URL/Add?LHS=1")
        #expect(url.scheme == "calc")
        #expect(url.host == "x-callback-url")
        #expect(url.pathSegments == ["Add"])
        #expect(url.parameters.first("LHS") == "1")
        #expect(url.parameters.first("lhs") == nil)
        let other = try RequestURL(parsing: "MyApp://Alert/Show")
        #expect(other.scheme == "myapp")
        #expect(other.host == "Alert")
    }

    @Test func recognisesAPercentEncodedXCallbackHost() throws {
        let url = try RequestURL(parsing: "calc://x%2Dcallback%2DURL/add")
        #expect(url.host == "x-callback-url")
    }

    @Test func keepsTheAuthorityAsWritten() throws {
        let url = try RequestURL(parsing: "app://user@example.com:8080/a")
        #expect(url.host == "user@example.com:8080")
        #expect(url.pathSegments == ["a"])
    }

    @Test func acceptsURLsWithoutAuthority() throws {
        let url = try RequestURL(parsing: "mailto:someone@example.com?subject=Hi")
        #expect(url.scheme == "mailto")
        #expect(url.host == "")
        #expect(url.pathSegments == ["someone@example.com"])
        #expect(url.parameters.first("subject") == "Hi")

        let rooted = try RequestURL(parsing: "app:/a/b")
        #expect(rooted.host == "")
        #expect(rooted.pathSegments == ["a", "b"])

        let bare = try RequestURL(parsing: "app:")
        #expect(bare.scheme == "app")
        #expect(bare.host == "")
        #expect(bare.pathSegments.isEmpty)
        #expect(bare.parameters.isEmpty)
    }

    @Test func emptyAuthority() throws {
        let url = try RequestURL(parsing: "file:///tmp/x")
        #expect(url.host == "")
        #expect(url.pathSegments == ["tmp", "x"])
        let nothing = try RequestURL(parsing: "app://")
        #expect(nothing.host == "")
        #expect(nothing.pathSegments.isEmpty)
    }

    @Test func dropsEmptyPathSegmentsAndDecodesTheRest() throws {
        let url = try RequestURL(parsing: "app://h/a//b/%20c%2Fd/")
        #expect(url.pathSegments == ["a", "b", " c/d"])
        let root = try RequestURL(parsing: "app://h/")
        #expect(root.pathSegments.isEmpty)
    }

    @Test func splitsTheQueryOnAmpersandAndTheFirstEquals() throws {
        let url = try RequestURL(parsing: "app://h/p?a=1=2&b&&c=&=v&d=%26%3D&")
        #expect(Array(url.parameters) == [
            QueryParameter("a", "1=2"),
            QueryParameter("b", ""),
            QueryParameter("c", ""),
            QueryParameter("", "v"),
            QueryParameter("d", "&="),
        ])
    }

    @Test func plusIsALiteralPlus() throws {
        let url = try RequestURL(parsing: "app://h?q=a+b&r=a%2Bb&s=a%20b")
        #expect(url.parameters.first("q") == "a+b")
        #expect(url.parameters.first("r") == "a+b")
        #expect(url.parameters.first("s") == "a b")
    }

    @Test func keepsRepeatedKeysInOrder() throws {
        let url = try RequestURL(parsing: "pokedex://pokemons?types=water&x=1&types=grass")
        #expect(url.parameters.all("types") == ["water", "grass"])
        #expect(url.parameters.first("types") == "water")
        #expect(url.parameters.all("none") == [])
        #expect(url.parameters.count == 3)
    }

    @Test func splitsOutXCallbackParametersFirstOccurrenceWins() throws {
        let url = try RequestURL(parsing:
            "calc://x-callback-url/add?x-source=A&x-success=app%3A%2F%2Fok%3Fa%3D1%26b%3D2&x-error=app://err"
            + "&x-cancel=app://no&x-success=app://second&x-source=B&lhs=1")
        #expect(url.source == "A")
        #expect(url.successURL == "app://ok?a=1&b=2")
        #expect(url.errorURL == "app://err")
        #expect(url.cancelURL == "app://no")
        #expect(Array(url.parameters) == [QueryParameter("lhs", "1")])
        #expect(url.callbackURL(for: .success) == "app://ok?a=1&b=2")
        #expect(url.callbackURL(for: .error) == "app://err")
        #expect(url.callbackURL(for: .cancel) == "app://no")
    }

    @Test func xCallbackNamesAreCaseSensitiveAndMayBeEncoded() throws {
        let url = try RequestURL(parsing: "a://x-callback-url/p?X-Success=u&x%2Dsuccess=v&x-successful=w&x-=1")
        #expect(url.successURL == "v")
        #expect(Array(url.parameters) == [
            QueryParameter("X-Success", "u"), QueryParameter("x-successful", "w"), QueryParameter("x-", "1"),
        ])
    }

    @Test func emptyCallbackURLsCountAsAbsent() throws {
        let url = try RequestURL(parsing: "a://x-callback-url/p?x-success=&x-error")
        #expect(url.successURL == "")
        #expect(url.errorURL == "")
        #expect(url.callbackURL(for: .success) == nil)
        #expect(url.callbackURL(for: .error) == nil)
    }

    @Test func keepsTheFragmentRaw() throws {
        let url = try RequestURL(parsing: "app://h/p?a=1#frag%20ment?x=1&y#z")
        #expect(url.parameters == [QueryParameter("a", "1")])
        #expect(url.fragment == "frag%20ment?x=1&y#z")
        let noQuery = try RequestURL(parsing: "app://h/p#")
        #expect(noQuery.pathSegments == ["p"])
        #expect(noQuery.fragment == "")
        let hostOnly = try RequestURL(parsing: "app://h#f")
        #expect(hostOnly.host == "h")
        #expect(hostOnly.fragment == "f")
    }

    @Test func questionMarksAfterTheFirstAreData() throws {
        let url = try RequestURL(parsing: "app://h?a=?b?&c=d/e")
        #expect(url.parameters == [QueryParameter("a", "?b?"), QueryParameter("c", "d/e")])
    }

    @Test func acceptsUnicodeLiterallyAndEncoded() throws {
        let url = try RequestURL(parsing: "app://hôte/π?名前=%E5%80%A4&emoji=🦊")
        #expect(url.host == "hôte")
        #expect(url.pathSegments == ["π"])
        #expect(url.parameters.first("名前") == "値")
        #expect(url.parameters.first("emoji") == "🦊")
    }

    @Test func parsesLongLines() throws {
        // Long enough that the decoding scratch buffer is no longer on the stack.
        let value = String(repeating: "%C3%A9x", count: 4_000)
        let url = try RequestURL(parsing: "app://h/p?v=\(value)&x-success=\(value)")
        #expect(url.parameters.first("v") == String(repeating: "éx", count: 4_000))
        #expect(url.successURL == url.parameters.first("v"))
    }

    @Test func parsesBytesLikeStrings() throws {
        let line = "calc://x-callback-url/add?lhs=%C3%A9&x-success=a://b"
        let fromString = try RequestURL(parsing: line)
        let bytes = Array(line.utf8)
        let fromBytes = try bytes.withUnsafeBufferPointer { buffer throws(URLParseError) in
            try RequestURL(parsing: buffer)
        }
        #expect(fromString == fromBytes)
        #expect(fromBytes.parameters.first("lhs") == "é")
    }
}

@Suite struct RequestURLErrors {
    func error(_ line: String, limits: ParseLimits = .default) -> URLParseError? {
        do {
            _ = try RequestURL(parsing: line, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    func error(bytes: [UInt8]) -> URLParseError? {
        bytes.withUnsafeBufferPointer { buffer -> URLParseError? in
            do throws(URLParseError) {
                _ = try RequestURL(parsing: buffer)
                return nil
            } catch {
                return error
            }
        }
    }

    @Test func emptyLine() {
        #expect(error("")?.kind == .empty)
        #expect(error(bytes: [])?.kind == .empty)
    }

    @Test func tooLong() {
        let limits = ParseLimits(maxLineBytes: 10)
        #expect(error("app://abcd", limits: limits) == nil)
        let failure = error("app://abcde", limits: limits)
        #expect(failure?.kind == .tooLong)
        #expect(failure?.message == "line is 11 bytes long, more than the limit of 10 bytes")
        #expect(ParseLimits.default.maxLineBytes == 65_536)
        let long = "app://h?v=" + String(repeating: "a", count: 65_536)
        #expect(error(long)?.kind == .tooLong)
    }

    @Test func tooLongIsCheckedBeforeContent() {
        // A NUL past the limit must not matter: the length decides first.
        let failure = error(bytes: Array("app://h?".utf8) + [0] + Array(repeating: 0x61, count: 70_000))
        #expect(failure?.kind == .tooLong)
    }

    @Test func nulByteAnywhere() {
        for position in [0, 3, 5, 9, 17, 30] {
            var bytes = Array("calc://x-callback-url/add?lhs=1".utf8)
            bytes[position] = 0
            let failure = error(bytes: bytes)
            #expect(failure?.kind == .nulByte)
            #expect(failure?.offset == position)
        }
        let viaString = error("app://h?a=b\u{0}c")
        #expect(viaString?.kind == .nulByte)
        #expect(viaString?.offset == 11)
        #expect(viaString?.message == "NUL byte at byte 11")
    }

    @Test func encodedNulIsRejectedToo() {
        let failure = error("app://h?a=b%00c")
        #expect(failure?.kind == .nulByte)
        #expect(failure?.offset == 11)
    }

    @Test func invalidRawUTF8() {
        let cases: [([UInt8], Int)] = [
            (Array("app://h?a=".utf8) + [0xFF], 10),
            (Array("app://h?a=".utf8) + [0xC3], 10),                   // cut short
            (Array("app://h?a=".utf8) + [0xC0, 0xAF], 10),             // overlong
            (Array("app://h?a=".utf8) + [0xED, 0xA0, 0x80], 10),       // surrogate
            (Array("app://h?a=".utf8) + [0xF4, 0x90, 0x80, 0x80], 10), // past U+10FFFF
            (Array("app://h?a=é".utf8) + [0x80], 12),                  // stray continuation
            ([0xE2, 0x82], 0),
        ]
        for (bytes, offset) in cases {
            let failure = error(bytes: bytes)
            #expect(failure?.kind == .invalidUTF8, "\(bytes)")
            #expect(failure?.offset == offset, "\(bytes)")
        }
        #expect(error(bytes: Array("app://h?a=é€𝄞".utf8)) == nil)
    }

    @Test func invalidDecodedUTF8() {
        let failure = error("app://h?name=ok&a=%C3%28")
        #expect(failure?.kind == .invalidUTF8)
        #expect(failure?.offset == 18)
        #expect(error("app://h/%FF")?.kind == .invalidUTF8)
        #expect(error("app://%E2%82/")?.kind == .invalidUTF8)
        #expect(error("app://h?%ED%A0%80=1")?.kind == .invalidUTF8)
    }

    @Test func missingScheme() {
        for line in ["calc", "calc//x-callback-url/add", "/path:x", "?a=b:c", "#x:y", "x-callback-url/add?a=1"] {
            #expect(error(line)?.kind == .missingScheme, "\(line)")
        }
        #expect(error(":rest")?.kind == .missingScheme)
    }

    @Test func invalidSchemeCharacter() {
        let failure = error("my app://x")
        #expect(failure?.kind == .invalidSchemeCharacter)
        #expect(failure?.offset == 2)
        #expect(failure?.message == "invalid character ' ' in scheme at byte 2")
        let digit = error("1app://x")
        #expect(digit?.kind == .invalidSchemeCharacter)
        #expect(digit?.offset == 0)
        #expect(digit?.message == "scheme must start with a letter, not '1' at byte 0")
        #expect(error("ap_p://x")?.offset == 2)
        #expect(error("+app://x")?.offset == 0)
        #expect(error("épp://x")?.offset == 0)
        #expect(error("a+b-c.d9://x") == nil)
    }

    @Test func malformedPercentEscapes() {
        let failure = error("app://x-callback-url/a?b=%G1")
        #expect(failure?.kind == .malformedPercentEscape)
        #expect(failure?.offset == 25)
        #expect(failure?.message == "invalid percent escape '%G1' at byte 25: '%' must be followed by two hex digits")
        let cut = error("app://h?a=%4&b=1")
        #expect(cut?.kind == .malformedPercentEscape)
        #expect(cut?.offset == 10)
        #expect(cut?.message.contains("'%4'") == true)
        for line in ["app://h%/", "app://h/%", "app://h/a%2", "app://h?%zz=1", "app://h?a=%", "app://h?a=%%41"] {
            #expect(error(line)?.kind == .malformedPercentEscape, "\(line)")
        }
        // The fragment is not decoded, so it is not checked either.
        #expect(error("app://h#%zz") == nil)
    }

    @Test func errorsDescribeThemselves() {
        let failure = error("my app://x")
        #expect(failure.map { String(describing: $0) } == failure?.message)
    }
}
