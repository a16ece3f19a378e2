import Foundation
import Testing
import XCallbackURL

/// RequestURL against Foundation's URLComponents on generated x-callback URLs.
///
/// Intended differences, each normalised below and pinned by `intendedDifferences`:
/// 1. Scheme: URLComponents keeps its case; RequestURL lowercases it (schemes are case-insensitive).
/// 2. Host: any spelling of `x-callback-url` becomes `x-callback-url`; other hosts match.
///    (URLComponents also splits off user info and port; RequestURL keeps the authority whole.)
/// 3. Path: RequestURL splits on '/' before decoding and drops empty segments, so `%2F` stays inside
///    its segment and `a//b/` is `["a", "b"]`; URLComponents.path decodes first and keeps empty segments.
/// 4. A key without '=': URLComponents gives a nil value, RequestURL "".
/// 5. An empty piece (`&&`, a trailing `&`): URLComponents gives an item with an empty name and nil value;
///    RequestURL skips it.
/// 6. x-source, x-success, x-error, x-cancel: URLComponents lists them as query items; RequestURL splits them out
///    (first occurrence wins).
/// 7. Errors: URLComponents keeps a malformed escape (`%zz`) as literal text and decodes `%00` to NUL;
///    RequestURL rejects both (malformedPercentEscape, nulByte), and rejects escapes that decode to invalid UTF-8.
/// 8. Characters RFC 3986 does not allow literally (a space, non-ASCII, '|', '^', …): on Linux, URLComponents then
///    percent-encodes the whole line, '%' included, so the escapes already there are no longer decoded
///    (`?x=%41&y=é` gives x = "%41"). RequestURL takes such characters as they are and still decodes every escape.
///    The generated URLs are therefore strictly valid RFC 3986.
/// 9. A decoded text that starts with U+FEFF: URLComponents drops that byte order mark, RequestURL keeps it.
/// '+' is NOT a difference: both read it as a literal plus.
@Suite struct FoundationDifferentialTests {
    @Test func agreesWithURLComponentsOnGeneratedXCallbackURLs() throws {
        var rng = SeededGenerator(seed: 0x5EED_F00D)
        var compared = 0
        for _ in 0..<10_000 {
            let line = generateURL(&rng)
            let ours = try RequestURL(parsing: line)
            guard let theirs = URLComponents(string: line) else {
                Issue.record("URLComponents rejected \(line)")
                continue
            }
            compared += 1

            #expect(ours.scheme == theirs.scheme?.lowercased(), "\(line)")                        // difference 1

            var theirHost = theirs.host ?? ""
            if theirHost.lowercased() == "x-callback-url" { theirHost = "x-callback-url" }        // difference 2
            #expect(ours.host == theirHost, "\(line)")

            let theirSegments = theirs.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: true)
                .map { $0.removingPercentEncoding ?? "<undecodable>" }                          // difference 3
            #expect(ours.pathSegments.map(droppingBOM) == theirSegments, "\(line)")          // difference 9

            var theirParameters: [QueryParameter] = []
            var theirCallbacks: [String: String] = [:]
            for item in theirs.queryItems ?? [] {
                if item.name.isEmpty && item.value == nil { continue }                          // difference 5
                let value = item.value ?? ""                                                    // difference 4
                if ["x-source", "x-success", "x-error", "x-cancel"].contains(item.name) {      // difference 6
                    if theirCallbacks[item.name] == nil { theirCallbacks[item.name] = value }
                } else {
                    theirParameters.append(QueryParameter(item.name, value))
                }
            }
            #expect(ours.parameters.map { QueryParameter(droppingBOM($0.name), droppingBOM($0.value)) } == theirParameters,
                    "\(line)")
            #expect(ours.source.map(droppingBOM) == theirCallbacks["x-source"], "\(line)")
            #expect(ours.successURL.map(droppingBOM) == theirCallbacks["x-success"], "\(line)")
            #expect(ours.errorURL.map(droppingBOM) == theirCallbacks["x-error"], "\(line)")
            #expect(ours.cancelURL.map(droppingBOM) == theirCallbacks["x-cancel"], "\(line)")
            #expect(ours.fragment == theirs.percentEncodedFragment, "\(line)")
        }
        #expect(compared == 10_000)
    }

    @Test func intendedDifferences() throws {
        let line = "CALC://X-Callback-URL/a//b/%2Fc/?p=1+2&flag&&e=&x-success=app://ok&"
        let ours = try RequestURL(parsing: line)
        let theirs = try #require(URLComponents(string: line))

        #expect(theirs.scheme == "CALC")
        #expect(ours.scheme == "calc")
        #expect(theirs.host == "X-Callback-URL")
        #expect(ours.host == "x-callback-url")
        #expect(theirs.path == "/a//b//c/")
        #expect(ours.pathSegments == ["a", "b", "/c"])
        #expect(theirs.queryItems == [
            URLQueryItem(name: "p", value: "1+2"), URLQueryItem(name: "flag", value: nil), URLQueryItem(name: "", value: nil),
            URLQueryItem(name: "e", value: ""), URLQueryItem(name: "x-success", value: "app://ok"),
            URLQueryItem(name: "", value: nil),
        ])
        #expect(Array(ours.parameters) == [QueryParameter("p", "1+2"), QueryParameter("flag", ""), QueryParameter("e", "")])
        #expect(ours.successURL == "app://ok")

        let authority = try RequestURL(parsing: "app://user@example.com:8080/p")
        #expect(authority.host == "user@example.com:8080")
        #expect(URLComponents(string: "app://user@example.com:8080/p")?.host == "example.com")

        #expect(URLComponents(string: "a://h?v=%zz")?.queryItems?.first?.value == "%zz")
        #expect(throws: URLParseError.self) { try RequestURL(parsing: "a://h?v=%zz") }
        #expect(URLComponents(string: "a://h?v=%00")?.queryItems?.first?.value == "\u{0}")
        #expect(throws: URLParseError.self) { try RequestURL(parsing: "a://h?v=%00") }

        #expect(URLComponents(string: "a://h?x=%41&y=é")?.queryItems?.first?.value == "%41")
        #expect(try RequestURL(parsing: "a://h?x=%41&y=é").parameters == [QueryParameter("x", "A"), QueryParameter("y", "é")])

        #expect(URLComponents(string: "a://h?x=%EF%BB%BFa")?.queryItems?.first?.value == "a")
        #expect(try RequestURL(parsing: "a://h?x=%EF%BB%BFa").parameters.first("x") == "\u{FEFF}a")
    }

    private func droppingBOM(_ text: String) -> String {
        text.unicodeScalars.first == "\u{FEFF}" ? String(text.unicodeScalars.dropFirst()) : text
    }

    // MARK: - Generating x-callback URLs

    /// Strict encoding (ours), or the loosest one RFC 3986 allows: unreserved bytes, the
    /// sub-delimiters other than '&' and '=', ':' and '@' (and '/', '?' in a query) stay literal.
    private func encode(_ text: String, _ rng: inout SeededGenerator, inPath: Bool) -> String {
        if Bool.random(using: &rng) { return PercentEncoding.encode(text) }
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "!", "$", "'", "(", ")", "*", "+", ",", ";", ":", "@":
                output.unicodeScalars.append(scalar)
            case "/" where !inPath, "?" where !inPath:
                output.unicodeScalars.append(scalar)
            default:
                output += PercentEncoding.encode(String(scalar))
            }
        }
        return output
    }

    private func text(_ rng: inout SeededGenerator, nonEmpty: Bool = false) -> String {
        while true {
            let candidate = Generate.unicodeString(&rng, maxLength: 10, allowNUL: false)
            if !nonEmpty || !candidate.isEmpty { return candidate }
        }
    }

    private func randomCase(_ text: String, _ rng: inout SeededGenerator) -> String {
        String(text.map { Bool.random(using: &rng) ? Character($0.uppercased()) : $0 })
    }

    private func generateURL(_ rng: inout SeededGenerator) -> String {
        var line = randomCase(Generate.scheme(&rng), &rng) + "://"
        line += Int.random(in: 0..<4, using: &rng) == 0
            ? Generate.word(&rng, from: Generate.lowercase + Generate.digits + "-.", length: 1...12)
            : randomCase("x-callback-url", &rng)
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            line += "/" + (Int.random(in: 0..<6, using: &rng) == 0 ? "" : encode(text(&rng, nonEmpty: true), &rng, inPath: true))
        }
        if Int.random(in: 0..<5, using: &rng) == 0 { line += "/" }

        var pieces: [String] = []
        for _ in 0..<Int.random(in: 0...5, using: &rng) {
            // A name that is only a BOM would look like an empty piece to URLComponents (difference 9 meets 5).
            var plainName = text(&rng, nonEmpty: true)
            if plainName == "\u{FEFF}" { plainName += "n" }
            let name = encode(plainName, &rng, inPath: false)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: pieces.append(name)                                       // no '='
            case 1: pieces.append("")                                         // '&&'
            case 2: pieces.append(name + "=" + "a+b")                         // literal '+'
            default: pieces.append(name + "=" + encode(text(&rng), &rng, inPath: false))
            }
        }
        for callback in ["x-source", "x-success", "x-error", "x-cancel"] where Bool.random(using: &rng) {
            let target = "app://x-callback-url/done?from=" + PercentEncoding.encode(text(&rng)) + "&n=1"
            pieces.insert(callback + "=" + PercentEncoding.encode(target), at: Int.random(in: 0...pieces.count, using: &rng))
        }
        if !pieces.isEmpty || Bool.random(using: &rng) { line += "?" + pieces.joined(separator: "&") }
        if Int.random(in: 0..<8, using: &rng) == 0 { line += "#" + PercentEncoding.encode(text(&rng)) }
        return line
    }
}
