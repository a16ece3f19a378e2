import Testing
@testable import XCallbackRouting

/// Route literals compare byte for byte, like every other URL component: a route written
/// with a precomposed `é` (U+00E9) is not the route written `e` + U+0301, though Swift's
/// `String ==` calls them equal. (Found by the `route-matcher` fuzz target.)
@Suite struct ByteExactLiteralTests {
    let composed = "caf\u{E9}"
    let decomposed = "cafe\u{301}"

    @Test func aLiteralMatchesOnlyItsOwnBytes() throws {
        let table = try makeTable(["a://b/\(composed)"])
        #expect(table.firstMatch(scheme: "a", host: "b", path: [composed]) != nil)
        #expect(table.firstMatch(scheme: "a", host: "b", path: [decomposed]) == nil)
        #expect(Array(table.matches(scheme: "a", host: "b", path: [decomposed])).isEmpty)
    }

    @Test func routesDifferingOnlyInNormalisationAreDifferentShapes() throws {
        var table = RouteTable<Int>()
        #expect(table.insert(try RoutePattern("a://\(composed)"), value: 1).isEmpty)
        #expect(table.insert(try RoutePattern("a://\(decomposed)"), value: 2).isEmpty)
        #expect(table.firstMatch(scheme: "a", host: composed, path: [])?.value == 1)
        #expect(table.firstMatch(scheme: "a", host: decomposed, path: [])?.value == 2)
    }

    @Test func patternsAndSegmentsCompareBytes() throws {
        #expect(try RoutePattern("a://\(composed)") != RoutePattern("a://\(decomposed)"))
        #expect(RouteSegment.literal(composed) != .literal(decomposed))
        #expect(Set([RouteSegment.literal(composed), .literal(decomposed)]).count == 2)
        // Optional groups whose literals differ only in normalisation stay four alternatives.
        let pattern = try RoutePattern("a://b(/\(composed))(/\(decomposed))")
        #expect(pattern.alternatives.count == 4)
    }
}
