import Testing
@testable import XCallbackRouting

/// The "did you mean" of `NotFoundAction` (docs/usage.md, "Error codes").
@Suite struct NearestRouteTests {
    let table: RouteTable<String>

    init() throws {
        table = try makeTable([
            "calc://x-callback-url/add", "calc://x-callback-url/subtract", "myapp://alert/show",
            "pokedex://pokemons/:id", "files://open/*", "a://b/c(/:x)",
        ])
    }

    func nearest(_ url: String) -> String? {
        let (scheme, host, path) = request(url)
        return table.nearestRoute(scheme: scheme, host: host, path: path)?.text
    }

    @Test func aTypoInTheActionSuggestsTheRoute() {
        #expect(nearest("calc://x-callback-url/ad") == "calc://x-callback-url/add")
        #expect(nearest("calc://x-callback-url/substract") == "calc://x-callback-url/subtract")
        #expect(nearest("myapp://alert/shwo") == "myapp://alert/show")
    }

    @Test func aTypoInTheSchemeOrHostSuggestsTheRoute() {
        #expect(nearest("calk://x-callback-url/add") == "calc://x-callback-url/add")
        #expect(nearest("CALC://X-Callback-URL/ad") == "calc://x-callback-url/add")
        #expect(nearest("myapp://alrt/show") == "myapp://alert/show")
    }

    @Test func argumentsAndWildcardsStandForWhatTheRequestHasThere() {
        #expect(nearest("pokedex://pokemon/25") == "pokedex://pokemons/:id")
        #expect(nearest("file://open/a/b/c") == "files://open/*")
        #expect(nearest("a://b/d/7") == "a://b/c(/:x)")
    }

    @Test func nothingNearGivesNoSuggestion() {
        #expect(nearest("calc://x-callback-url/divide") == nil)
        #expect(nearest("nothing://x/y") == nil)
        #expect(nearest("calc://x-callback-url/" + String(repeating: "a", count: 600)) == nil)
    }

    @Test func aShortRequestAllowsOneEditALongOneThree() {
        #expect(NearestRoute.maxEdits(forLength: 5) == 1)
        #expect(NearestRoute.maxEdits(forLength: 25) == 2)
        #expect(NearestRoute.maxEdits(forLength: 200) == 3)
    }

    @Test func editsCountTyposCappedByTheLimit() {
        func edits(_ a: String, _ b: String, _ limit: Int = 10) -> Int? {
            EditDistance.between(Array(a.utf8), Array(b.utf8), atMost: limit)
        }
        #expect(edits("", "") == 0)
        #expect(edits("", "abc") == 3)
        #expect(edits("kitten", "sitting") == 3)
        #expect(edits("kitten", "sitting", 2) == nil)
        #expect(edits("flaw", "lawn") == 2)
        #expect(edits("shwo", "show") == 1, "two neighbours swapped are one typo")
        #expect(edits("ca", "abc") == 3)
        #expect(edits("same", "same") == 0)
    }

    @Test func tiesGoToTheRouteRegisteredFirst() throws {
        let table = try makeTable(["t://x/ab", "t://x/ba"])
        #expect(table.nearestRoute(scheme: "t", host: "x", path: ["aa"])?.text == "t://x/ab")
    }
}
