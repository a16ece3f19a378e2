import Testing
@testable import XCallbackRouting

@Suite struct RoutePatternTests {
    @Test func xCallbackURLAction() throws {
        let pattern = try RoutePattern("calc://x-callback-url/add")
        #expect(pattern.text == "calc://x-callback-url/add")
        #expect(pattern.scheme == "calc")
        #expect(pattern.alternatives == [[.literal("x-callback-url"), .literal("add")]])
        #expect(pattern.argumentNames.isEmpty)
        #expect(pattern.description == "calc://x-callback-url/add")
    }

    @Test func schemeAndXCallbackURLHostAreLowercased() throws {
        let pattern = try RoutePattern("CaLc://X-Callback-URL/Add")
        #expect(pattern.scheme == "calc")
        #expect(pattern.text == "CaLc://X-Callback-URL/Add")
        #expect(pattern.alternatives == [[.literal("x-callback-url"), .literal("Add")]])
    }

    @Test func everyHostIsLowercasedAndPathSegmentsKeepTheirCase() throws {
        let pattern = try RoutePattern("myapp://Alert/Show/X-Callback-URL")
        #expect(pattern.alternatives == [[.literal("alert"), .literal("Show"), .literal("X-Callback-URL")]])
        #expect(pattern.text == "myapp://Alert/Show/X-Callback-URL")
    }

    @Test func argumentsAndWildcard() throws {
        let pattern = try RoutePattern("files://:volume/dir/:name/*")
        #expect(pattern.alternatives == [[.argument("volume"), .literal("dir"), .argument("name"), .wildcard]])
        #expect(pattern.argumentNames == ["volume", "name", "*"])
    }

    @Test func wildcardAsHost() throws {
        let pattern = try RoutePattern("any://*")
        #expect(pattern.alternatives == [[.wildcard]])
        #expect(pattern.argumentNames == ["*"])
    }

    @Test func optionalGroupExpandsLongestFirst() throws {
        let pattern = try RoutePattern("pokedex://pokemons(/:pokedexID)")
        #expect(pattern.alternatives == [
            [.literal("pokemons"), .argument("pokedexID")],
            [.literal("pokemons")],
        ])
        #expect(pattern.argumentNames == ["pokedexID"])
    }

    @Test func nestedGroups() throws {
        let pattern = try RoutePattern("a://b/c(/:x(/:y))")
        #expect(pattern.alternatives == [
            [.literal("b"), .literal("c"), .argument("x"), .argument("y")],
            [.literal("b"), .literal("c"), .argument("x")],
            [.literal("b"), .literal("c")],
        ])
        #expect(pattern.argumentNames == ["x", "y"])
    }

    @Test func sequentialGroupsKeepPresentBeforeAbsentAmongEqualLengths() throws {
        let pattern = try RoutePattern("a://b(/c)(/d/e)(/*)")
        #expect(pattern.alternatives.map { $0.map(\.description).joined(separator: "/") } == [
            "b/c/d/e/*", "b/c/d/e", "b/d/e/*", "b/c/*", "b/d/e", "b/c", "b/*", "b",
        ])
    }

    @Test func groupsInTheMiddle() throws {
        let pattern = try RoutePattern("a://b(/:x)/c")
        #expect(pattern.alternatives == [
            [.literal("b"), .argument("x"), .literal("c")],
            [.literal("b"), .literal("c")],
        ])
    }

    @Test func identicalAlternativesAppearOnce() throws {
        let pattern = try RoutePattern("a://b(/c)(/c)")
        #expect(pattern.alternatives == [
            [.literal("b"), .literal("c"), .literal("c")],
            [.literal("b"), .literal("c")],
            [.literal("b")],
        ])
    }

    @Test func percentEscapesInLiteralsAreDecoded() throws {
        let pattern = try RoutePattern("a://b/hello%20world/%3Aliteral/%2A/caf%C3%A9/naïve")
        #expect(pattern.alternatives == [[
            .literal("b"), .literal("hello world"), .literal(":literal"), .literal("*"),
            .literal("café"), .literal("naïve"),
        ]])
    }

    @Test func colonInsideALiteralIsText() throws {
        let pattern = try RoutePattern("a://b/c:d")
        #expect(pattern.alternatives == [[.literal("b"), .literal("c:d")]])
    }

    @Test func schemeWithDigitsPlusMinusDot() throws {
        #expect(try RoutePattern("x-App.2+b://h").scheme == "x-app.2+b")
    }

    @Test func equalityIsByText() throws {
        #expect(try RoutePattern("a://b/c") == RoutePattern("a://b/c"))
        #expect(try RoutePattern("A://b/c") != RoutePattern("a://b/c"))
        let set: Set = [try RoutePattern("a://b/c"), try RoutePattern("a://b/c")]
        #expect(set.count == 1)
    }

    @Test func actionConstructor() throws {
        let pattern = try RoutePattern.action(scheme: "Calc", action: "add")
        #expect(pattern.text == "Calc://x-callback-url/add")
        #expect(pattern.scheme == "calc")
        #expect(pattern.alternatives == [[.literal("x-callback-url"), .literal("add")]])
    }

    @Test func controllerActionConstructor() throws {
        let pattern = try RoutePattern.controllerAction(scheme: "myapp", controller: "alert", action: "show")
        #expect(pattern.text == "myapp://alert/show")
        #expect(pattern.alternatives == [[.literal("alert"), .literal("show")]])
    }

    @Test(arguments: [
        ("a/b", 22),
        (":id", 22),
        ("*", 22),
        ("b(/c)", 22),
    ])
    func actionConstructorRefusesNonLiteralActions(action: String, offset: Int) {
        let error = #expect(throws: RoutePatternError.self) {
            try RoutePattern.action(scheme: "calc", action: action)
        }
        #expect(error?.offset == offset)
        #expect(error?.kind == .notASingleSegment)
        #expect(error?.message.hasPrefix("the action must be one literal segment") == true)
    }

    @Test(arguments: [":c", "a/b", "a(/b)"])
    func controllerActionRefusesNonLiteralControllers(controller: String) {
        let error = #expect(throws: RoutePatternError.self) {
            try RoutePattern.controllerAction(scheme: "myapp", controller: controller, action: "show")
        }
        #expect(error?.offset == 8)
        #expect(error?.message.hasPrefix("the controller must be one literal segment") == true)
    }

    @Test func fixedFormConstructorsReportParseErrors() {
        #expect(throws: RoutePatternError.self) {
            try RoutePattern.controllerAction(scheme: "my app", controller: "c", action: "show")
        }
        #expect(throws: RoutePatternError.self) {
            try RoutePattern.action(scheme: "calc", action: "")
        }
    }
}
