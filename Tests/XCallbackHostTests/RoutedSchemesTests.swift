import Testing
@testable import XCallbackHost

/// Whether a callback is the next hop of a chain: one rule for the general
/// path's Strings and a lane's bytes.
@Suite("Routed schemes")
struct RoutedSchemesTests {
    private let schemes = RoutedSchemes(["calc", "Pokedex"])

    private func bytes(_ url: String) -> Bool {
        var url = url
        return url.withUTF8 { schemes.contains(schemeOf: $0) }
    }

    @Test("a URL's scheme matches without regard to ASCII case, in both forms", arguments: [
        ("calc://x-callback-url/add", true), ("CALC://x", true), ("pokedex:x", true), ("PoKeDeX://", true),
        ("calcx://x", false), ("cal://x", false), ("workflow://x", false), ("calc", false), ("", false),
        (":calc", false), ("ćalc://x", false),
    ])
    func matches(url: String, expected: Bool) {
        #expect(schemes.contains(schemeOf: url) == expected)
        #expect(bytes(url) == expected)
    }
}
