import Testing
@testable import XCallbackRouting

@Suite struct RouteTableMaintenanceTests {
    struct Owner: Sendable, Equatable {
        var plugin: String
        var handler: Int
    }

    @Test func countAndRoutesInRegistrationOrder() throws {
        var table = RouteTable<Int>()
        #expect(table.isEmpty)
        #expect(table.count == 0)
        let texts = ["z://b", "a://x-callback-url/add", "m://c/:d", "a://x-callback-url/add"]
        for (index, text) in texts.enumerated() {
            table.insert(try RoutePattern(text), value: index)
        }
        #expect(table.count == 4)
        #expect(!table.isEmpty)
        #expect(table.routes.map(\.pattern.text) == texts)
        #expect(table.routes.map(\.value) == [0, 1, 2, 3])
    }

    @Test func removeAllRemovesOnePluginAndKeepsTheOthers() throws {
        var table = RouteTable<Owner>()
        table.insert(try RoutePattern("calc://x-callback-url/add"), value: Owner(plugin: "calc", handler: 1))
        table.insert(try RoutePattern("a://b/:x"), value: Owner(plugin: "one", handler: 1))
        table.insert(try RoutePattern("a://b/c"), value: Owner(plugin: "two", handler: 1))
        table.insert(try RoutePattern("a://b/:y"), value: Owner(plugin: "two", handler: 2))
        table.insert(try RoutePattern("a://b/*"), value: Owner(plugin: "one", handler: 2))
        table.insert(try RoutePattern("a://b/:z"), value: Owner(plugin: "three", handler: 1))

        #expect(table.removeAll { $0.plugin == "one" } == 2)
        #expect(table.count == 4)
        #expect(table.routes.map(\.pattern.text) == ["calc://x-callback-url/add", "a://b/c", "a://b/:y", "a://b/:z"])

        let values = table.matches(scheme: "a", host: "b", path: ["c"]).map(\.value)
        #expect(values == [
            Owner(plugin: "two", handler: 1), Owner(plugin: "two", handler: 2), Owner(plugin: "three", handler: 1),
        ])
        #expect(table.firstMatch(scheme: "a", host: "b", path: ["q"])?.value == Owner(plugin: "two", handler: 2))
        #expect(table.firstMatch(scheme: "a", host: "b", path: ["q", "r"]) == nil)
        #expect(table.firstMatch(scheme: "calc", host: "x-callback-url", path: ["add"])?.value.plugin == "calc")
    }

    @Test func removeAllThenInsertKeepsReportingSameShapes() throws {
        var table = RouteTable<String>()
        table.insert(try RoutePattern("a://b/:x"), value: "old")
        table.insert(try RoutePattern("a://b/:y"), value: "keep")
        table.removeAll { $0 == "old" }
        let clashes = table.insert(try RoutePattern("a://b/:z"), value: "new")
        #expect(clashes.map(\.text) == ["a://b/:y"])
        #expect(table.candidates("a://b/1") == ["keep", "new"])
        // Reloading a plug-in: remove it, add it back; it now ranks after the others.
        table.removeAll { $0 == "keep" }
        table.insert(try RoutePattern("a://b/:y"), value: "keep")
        #expect(table.candidates("a://b/1") == ["new", "keep"])
    }

    @Test func removeAllOfNothingChangesNothing() throws {
        var table = try makeTable(["a://b", "a://b/:x"])
        #expect(table.removeAll { _ in false } == 0)
        #expect(table.count == 2)
        #expect(table.candidates("a://b/1") == ["a://b/:x"])
        #expect(table.removeAll { _ in true } == 2)
        #expect(table.isEmpty)
        #expect(table.first("a://b") == nil)
    }

    @Test func tablesAreValues() throws {
        let original = try makeTable(["a://b/:x"])
        var copy = original
        copy.insert(try RoutePattern("a://b/c"), value: "a://b/c")
        copy.removeAll { $0 == "a://b/:x" }
        #expect(original.candidates("a://b/c") == ["a://b/:x"])
        #expect(copy.candidates("a://b/c") == ["a://b/c"])
    }
}
