import Testing
@testable import XCallbackRouting

@Suite struct RouteTableMatchingTests {
    // MARK: The three request forms

    @Test func xCallbackURLAction() throws {
        let table = try makeTable(["calc://x-callback-url/add", "calc://x-callback-url/subtract"])
        let match = table.firstMatch(scheme: "calc", host: "x-callback-url", path: ["add"])
        #expect(match?.value == "calc://x-callback-url/add")
        #expect(match?.arguments.isEmpty == true)
        #expect(table.first("calc://x-callback-url/subtract")?.value == "calc://x-callback-url/subtract")
        #expect(table.first("calc://x-callback-url/multiply") == nil)
        #expect(table.first("calc://x-callback-url") == nil)
        #expect(table.first("calc://x-callback-url/add/more") == nil)
    }

    @Test func controllerAction() throws {
        let table = try makeTable(["myapp://alert/show", "myapp://alert/hide", "myapp://sheet/show"])
        #expect(table.first("myapp://alert/show")?.value == "myapp://alert/show")
        #expect(table.first("myapp://sheet/show")?.value == "myapp://sheet/show")
        #expect(table.first("myapp://sheet/hide") == nil)
        #expect(table.first("myapp://alert") == nil)
    }

    @Test func patternRouteBindsArguments() throws {
        let table = try makeTable(["pokedex://pokemons/:pokedexID", "pokedex://pokemons"])
        let match = try #require(table.first("pokedex://pokemons/25"))
        #expect(match.value == "pokedex://pokemons/:pokedexID")
        #expect(match.argument("pokedexID") == "25")
        #expect(match.argument("other") == nil)
        #expect(bound(match) == ["pokedexID=25"])
        #expect(table.first("pokedex://pokemons")?.value == "pokedex://pokemons")
    }

    @Test func builtWithTheFixedFormConstructors() throws {
        var table = RouteTable<Int>()
        table.insert(try .action(scheme: "calc", action: "add"), value: 1)
        table.insert(try .controllerAction(scheme: "myapp", controller: "alert", action: "show"), value: 2)
        #expect(table.firstMatch(scheme: "calc", host: "x-callback-url", path: ["add"])?.value == 1)
        #expect(table.firstMatch(scheme: "myapp", host: "alert", path: ["show"])?.value == 2)
    }

    @Test func argumentsInPatternOrderIncludingHost() throws {
        let table = try makeTable(["files://:volume/dir/:name/:version"])
        let match = table.first("files://home/dir/report/3")
        #expect(bound(match) == ["volume=home", "name=report", "version=3"])
    }

    @Test func argumentDoesNotMatchAnEmptySegment() throws {
        let table = try makeTable(["a://b/:x/c"])
        #expect(table.first("a://b//c") == nil)
        #expect(table.firstMatch(scheme: "a", host: "b", path: ["", "c"]) == nil)
        #expect(table.first("a://b/x/c") != nil)
    }

    @Test func argumentValuesAreTakenVerbatim() throws {
        let table = try makeTable(["a://b/:x"])
        #expect(table.firstMatch(scheme: "a", host: "b", path: ["hello world/ü"])?.argument("x") == "hello world/ü")
    }

    // MARK: Wildcard

    @Test func wildcardMatchesZeroOneOrManySegments() throws {
        let table = try makeTable(["files://open/*"])
        #expect(bound(table.first("files://open")) == ["*="])
        #expect(bound(table.first("files://open/a")) == ["*=a"])
        #expect(bound(table.first("files://open/a/b/c")) == ["*=a/b/c"])
        #expect(table.first("files://close/a") == nil)
    }

    @Test func wildcardKeepsEmptySegments() throws {
        let table = try makeTable(["files://open/*"])
        #expect(bound(table.first("files://open/a//b/")) == ["*=a//b/"])
    }

    @Test func wildcardAfterArguments() throws {
        let table = try makeTable(["files://:volume/*"])
        #expect(bound(table.first("files://home/a/b")) == ["volume=home", "*=a/b"])
    }

    @Test func wildcardAsHostMatchesEverythingInTheScheme() throws {
        let table = try makeTable(["any://*"])
        #expect(bound(table.first("any://host")) == ["*=host"])
        #expect(bound(table.first("any://host/a/b")) == ["*=host/a/b"])
        #expect(bound(table.first("any:///a")) == ["*=/a"])
        #expect(table.first("other://host") == nil)
    }

    // MARK: Optional groups

    @Test func optionalGroupMatchesWithAndWithout() throws {
        let table = try makeTable(["pokedex://pokemons(/:pokedexID)"])
        #expect(bound(table.first("pokedex://pokemons/25")) == ["pokedexID=25"])
        let without = try #require(table.first("pokedex://pokemons"))
        #expect(without.value == "pokedex://pokemons(/:pokedexID)")
        #expect(without.arguments.isEmpty)
        #expect(without.argument("pokedexID") == nil)
        #expect(table.first("pokedex://pokemons/25/x") == nil)
    }

    @Test func nestedOptionalGroups() throws {
        let table = try makeTable(["a://b/c(/:x(/:y))"])
        #expect(bound(table.first("a://b/c")) == [])
        #expect(bound(table.first("a://b/c/1")) == ["x=1"])
        #expect(bound(table.first("a://b/c/1/2")) == ["x=1", "y=2"])
        #expect(table.first("a://b/c/1/2/3") == nil)
        #expect(table.first("a://b") == nil)
    }

    @Test func optionalGroupInTheMiddle() throws {
        let table = try makeTable(["a://b(/:x)/c"])
        #expect(bound(table.first("a://b/1/c")) == ["x=1"])
        #expect(bound(table.first("a://b/c")) == [])
        #expect(table.first("a://b/1") == nil)
    }

    @Test func optionalWildcard() throws {
        let table = try makeTable(["a://b(/c/*)"])
        #expect(bound(table.first("a://b")) == [])
        #expect(bound(table.first("a://b/c")) == ["*="])
        #expect(bound(table.first("a://b/c/d/e")) == ["*=d/e"])
        #expect(table.first("a://b/d") == nil)
    }

    @Test func routeWithSeveralMatchingAlternativesIsOfferedOnceAtItsBest() throws {
        // "b/c" fits both [b, c] (exact) and [b, :x] (x = c): one candidate, the exact one.
        let table = try makeTable(["a://b(/c)(/:x)"])
        let all = Array(table.matches(scheme: "a", host: "b", path: ["c"]))
        #expect(all.count == 1)
        #expect(all.first.map(bound) == [])
        // With a wildcard, several alternatives can match a long request too.
        let wild = try makeTable(["a://b(/c)/*"])
        let candidates = Array(wild.matches(scheme: "a", host: "b", path: ["c", "d"]))
        #expect(candidates.count == 1)
        #expect(candidates.first.map(bound) == ["*=d"])
    }

    // MARK: Case

    @Test func schemeIsCaseInsensitive() throws {
        let table = try makeTable(["Calc://x-callback-url/add"])
        #expect(table.first("calc://x-callback-url/add") != nil)
        #expect(table.first("CALC://x-callback-url/add") != nil)
        #expect(table.first("cAlC://x-callback-url/add") != nil)
        #expect(Array(table.matches(scheme: "CALC", host: "x-callback-url", path: ["add"])).count == 1)
    }

    @Test func xCallbackURLHostInPatternsIsCaseInsensitive() throws {
        // The URL parser lowercases the host "x-callback-url"; patterns are normalised to match.
        let table = try makeTable(["calc://X-Callback-URL/add"])
        #expect(table.first("calc://x-callback-url/add")?.value == "calc://X-Callback-URL/add")
    }

    @Test func pathSegmentsAreCaseSensitive() throws {
        let table = try makeTable(["calc://x-callback-url/add", "myapp://alert/show"])
        #expect(table.first("calc://x-callback-url/Add") == nil)
        #expect(table.first("calc://x-callback-url/ADD") == nil)
        #expect(table.first("myapp://alert/Show") == nil)
    }

    /// `scheme://` alone is the scheme's root; `scheme://host` a host with no path.
    @Test func rootAndHostOnlyRoutes() throws {
        let table = try makeTable(["myapp://", "myapp://home", "myapp://:anything"])
        #expect(table.firstMatch(scheme: "myapp", host: "", path: [])?.value == "myapp://")
        #expect(table.firstMatch(scheme: "MyApp", host: "HOME", path: [])?.value == "myapp://home")
        #expect(table.firstMatch(scheme: "myapp", host: "other", path: [])?.value == "myapp://:anything")
        #expect(table.firstMatch(scheme: "myapp", host: "", path: ["x"]) == nil)
    }

    /// RFC 3986 3.2.2 and SPEC 1: `HTTP://Example.COM/a` reaches `http://example.com/a`,
    /// whatever the host; an argument bound to the host keeps the request's spelling.
    @Test func everyHostIsCaseInsensitive() throws {
        let table = try makeTable(["myapp://alert/show", "http://Example.COM/a", "files://:volume/list"])
        #expect(table.first("myapp://Alert/show")?.value == "myapp://alert/show")
        #expect(table.first("MYAPP://ALERT/show")?.value == "myapp://alert/show")
        #expect(table.first("HTTP://example.com/a")?.value == "http://Example.COM/a")
        #expect(table.first("http://EXAMPLE.com/a")?.value == "http://Example.COM/a")
        #expect(table.first("files://Backup/list")?.arguments.first?.value == "Backup")
        var candidates = table.matches(scheme: "Http", host: "eXample.com", path: ["a"])
        #expect(candidates.next()?.value == "http://Example.COM/a")
    }

    @Test func percentEscapedLiteralMatchesTheDecodedSegment() throws {
        let table = try makeTable(["a://b/hello%20world", "a://b/%3Ax"])
        #expect(table.firstMatch(scheme: "a", host: "b", path: ["hello world"]) != nil)
        #expect(table.firstMatch(scheme: "a", host: "b", path: [":x"])?.value == "a://b/%3Ax")
        #expect(table.firstMatch(scheme: "a", host: "b", path: ["y"]) == nil)
    }

    // MARK: Misses

    @Test func emptyTableAndUnknownSchemeMatchNothing() throws {
        let empty = RouteTable<String>()
        #expect(empty.first("a://b") == nil)
        var none = empty.matches(scheme: "a", host: "b", path: [])
        #expect(none.next() == nil)
        let table = try makeTable(["a://b"])
        #expect(table.first("z://b") == nil)
        #expect(Array(table.matches(scheme: "z", host: "b", path: [])).isEmpty)
    }
}
