import Testing
@testable import XCallbackRouting

@Suite struct RouteTablePrecedenceTests {
    @Test func literalBeatsArgumentBeatsWildcardInThePath() throws {
        let table = try makeTable(["a://b/*", "a://b/:x", "a://b/c"])
        #expect(table.candidates("a://b/c") == ["a://b/c", "a://b/:x", "a://b/*"])
        #expect(table.candidates("a://b/d") == ["a://b/:x", "a://b/*"])
        #expect(table.candidates("a://b/c/d") == ["a://b/*"])
    }

    @Test func literalBeatsArgumentBeatsWildcardInTheHost() throws {
        let table = try makeTable(["a://*", "a://:h/c", "a://b/c"])
        #expect(table.candidates("a://b/c") == ["a://b/c", "a://:h/c", "a://*"])
        #expect(table.candidates("a://z/c") == ["a://:h/c", "a://*"])
    }

    @Test func theFirstDifferingSegmentDecides() throws {
        // "b/c/:y" has a literal at depth 1 where "b/:x/d" has an argument, so it wins
        // although "b/:x/d" has the literal at depth 2; at depth 2, literal "d" beats ":y".
        let table = try makeTable([
            "a://b/:x/:y", "a://b/*", "a://b/:x/d", "a://b/c/*",
            "a://b/c/:y", "a://*", "a://b/c/d", "a://:h/c/d",
        ])
        #expect(table.candidates("a://b/c/d") == [
            "a://b/c/d", "a://b/c/:y", "a://b/c/*",
            "a://b/:x/d", "a://b/:x/:y", "a://b/*",
            "a://:h/c/d", "a://*",
        ])
        #expect(table.candidates("a://b/z/d") == ["a://b/:x/d", "a://b/:x/:y", "a://b/*", "a://*"])
        #expect(table.candidates("a://b/c/z") == ["a://b/c/:y", "a://b/c/*", "a://b/:x/:y", "a://b/*", "a://*"])
    }

    @Test func exactEndBeatsAWildcardMatchingNothing() throws {
        let table = try makeTable(["a://b/c/*", "a://b/c"])
        #expect(table.candidates("a://b/c") == ["a://b/c", "a://b/c/*"])
        #expect(bound(table.first("a://b/c/d")) == ["*=d"])
    }

    @Test func optionalAlternativesRankByTheirOwnShape() throws {
        // Request "pokemons/25": the group-present alternative is an argument match, so a
        // literal route wins; request "pokemons": the group-absent alternative is exact.
        let table = try makeTable(["pokedex://pokemons(/:id)", "pokedex://pokemons/25", "pokedex://*"])
        #expect(table.candidates("pokedex://pokemons/25") == [
            "pokedex://pokemons/25", "pokedex://pokemons(/:id)", "pokedex://*",
        ])
        #expect(table.candidates("pokedex://pokemons") == ["pokedex://pokemons(/:id)", "pokedex://*"])
    }

    // MARK: Same shape

    @Test func sameShapeIsReportedAndRanksByRegistration() throws {
        var table = RouteTable<String>()
        #expect(table.insert(try RoutePattern("a://b/:x"), value: "first").isEmpty)
        #expect(table.insert(try RoutePattern("a://b/c"), value: "literal").isEmpty)
        #expect(table.insert(try RoutePattern("a://b/*"), value: "wildcard").isEmpty)
        let second = table.insert(try RoutePattern("a://b/:y"), value: "second")
        #expect(second.map(\.text) == ["a://b/:x"])
        let third = table.insert(try RoutePattern("a://b/:z"), value: "third")
        #expect(third.map(\.text) == ["a://b/:x", "a://b/:y"])

        #expect(table.candidates("a://b/v") == ["first", "second", "third", "wildcard"])
        #expect(bound(table.first("a://b/v")) == ["x=v"])
        #expect(table.count == 5)
    }

    @Test func samePatternTwiceIsReportedNotRefused() throws {
        var table = RouteTable<Int>()
        let pattern = try RoutePattern("calc://x-callback-url/add")
        #expect(table.insert(pattern, value: 1).isEmpty)
        #expect(table.insert(pattern, value: 2) == [pattern])
        #expect(table.count == 2)
        let values = table.matches(scheme: "calc", host: "x-callback-url", path: ["add"]).map(\.value)
        #expect(values == [1, 2])
    }

    @Test func sameShapeThroughAnOptionalAlternative() throws {
        var table = RouteTable<String>()
        table.insert(try RoutePattern("a://b/:x"), value: "arg")
        table.insert(try RoutePattern("a://c"), value: "other")
        table.insert(try RoutePattern("a://b"), value: "bare")
        let clashes = table.insert(try RoutePattern("a://b(/:id)"), value: "optional")
        #expect(clashes.map(\.text) == ["a://b/:x", "a://b"])
        #expect(table.candidates("a://b") == ["bare", "optional"])
        #expect(table.candidates("a://b/1") == ["arg", "optional"])
    }

    @Test func sameShapeRoutesQueriesWithoutInserting() throws {
        let table = try makeTable(["a://b/:x", "a://b", "a://b/c", "a://b/*", "a://b/:y"])
        #expect(table.sameShapeRoutes(as: try RoutePattern("a://b(/:id)")).map(\.text) == ["a://b/:x", "a://b", "a://b/:y"])
        #expect(table.sameShapeRoutes(as: try RoutePattern("A://b/*")).map(\.text) == ["a://b/*"])
        #expect(table.sameShapeRoutes(as: try RoutePattern("a://b/d")).isEmpty)
        #expect(table.sameShapeRoutes(as: try RoutePattern("a://b/c/d")).isEmpty)
        #expect(table.sameShapeRoutes(as: try RoutePattern("z://b")).isEmpty)
        #expect(table.count == 5)
    }

    @Test func differentSchemesNeverShareAShape() throws {
        var table = RouteTable<String>()
        table.insert(try RoutePattern("a://b/:x"), value: "a")
        #expect(table.insert(try RoutePattern("z://b/:x"), value: "z").isEmpty)
        #expect(table.insert(try RoutePattern("A://b/:y"), value: "A").map(\.text) == ["a://b/:x"])
    }

    @Test func aPatternDoesNotClashWithItself() throws {
        var table = RouteTable<String>()
        // Two alternatives of one pattern with the same shape: kept once, first alternative wins.
        #expect(table.insert(try RoutePattern("a://b(/:x)(/:y)"), value: "p").isEmpty)
        #expect(table.candidates("a://b/1") == ["p"])
        #expect(bound(table.first("a://b/1")) == ["x=1"])
        #expect(bound(table.first("a://b/1/2")) == ["x=1", "y=2"])
    }

    // MARK: Declining: asking for the next candidate

    @Test func iterationYieldsTheNextCandidateThenEnds() throws {
        let table = try makeTable(["a://b/*", "a://b/:x", "a://b/c", "a://b/:y", "a://z"])
        var candidates = table.matches(scheme: "a", host: "b", path: ["c"])
        #expect(candidates.next()?.value == "a://b/c")
        // The handler declined: ask again.
        let second = candidates.next()
        #expect(second?.value == "a://b/:x")
        #expect(second?.argument("x") == "c")
        #expect(candidates.next()?.argument("y") == "c")
        #expect(candidates.next()?.argument("*") == "c")
        #expect(candidates.next() == nil)
        #expect(candidates.next() == nil)
    }

    @Test func firstMatchAgreesWithTheIterator() throws {
        let table = try makeTable([
            "a://b/:x/:y", "a://b/*", "a://b/:x/d", "a://b/c(/*)", "a://b/c/:y(/:z)", "a://*",
        ])
        for url in ["a://b", "a://b/c", "a://b/c/d", "a://b/q/d", "a://b/c/d/e", "a://q", "a://b//d"] {
            var iterator = table.matches(scheme: request(url).scheme, host: request(url).host, path: request(url).path)
            let viaIterator = iterator.next()
            let viaFirst = table.first(url)
            #expect(viaIterator?.value == viaFirst?.value, "\(url)")
            #expect(bound(viaIterator) == bound(viaFirst), "\(url)")
        }
    }

    @Test func iteratorIsAValueSnapshotOfTheTable() throws {
        var table = try makeTable(["a://b/:x", "a://b/*"])
        var candidates = table.matches(scheme: "a", host: "b", path: ["c"])
        table.insert(try RoutePattern("a://b/c"), value: "later")
        _ = table.removeAll { $0 == "a://b/*" }
        #expect(candidates.next()?.value == "a://b/:x")
        #expect(candidates.next()?.value == "a://b/*")
        #expect(candidates.next() == nil)
    }
}
