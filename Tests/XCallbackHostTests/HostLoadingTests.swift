import CXCallback
import Foundation
import Testing
import XCallbackURL

@testable import XCallbackHost

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `Host.loadPlugins(requireDirectories:)` over real plug-in directories:
/// route conflicts between plug-ins, failed registrations, duplicates and
/// refusals, as `host.plugins` reports them.
@Suite("Host loading", .ownThreads)
struct HostLoadingTests {
    /// A plug-in directory (0755) holding compiled plug-ins.
    private struct PluginDirectory {
        let temporary: TemporaryDirectory
        let path: String

        init() throws {
            temporary = try TemporaryDirectory()
            path = try temporary.directory("plugins")
        }

        /// Compiles `source` into `plugins/<name>.so`.
        @discardableResult
        func add(_ name: String, _ source: String) throws -> String {
            try CCompiler.plugin(name, source: source, in: temporary, into: path)
        }
    }

    private func loadedHost(_ directories: [String], allowInsecure: Bool = false,
                            log: LogCapture = LogCapture()) throws -> XCallbackHost.Host {
        let host = makeHost(directories, allowInsecure: allowInsecure, log: log)
        try host.loadPlugins(requireDirectories: true)
        return host
    }

    private func routeOwner(_ host: XCallbackHost.Host, _ line: String) -> String? {
        guard let url = try? RequestURL(parsing: line) else { return nil }
        return host.registry.table.firstMatch(scheme: url.scheme, host: url.host, path: url.pathSegments)?.value.pluginName
    }

    // MARK: route conflicts

    @Test func secondPluginGetsRouteConflictAndTheFirstKeepsItsRoute() throws {
        let directory = try PluginDirectory()
        let first = try directory.add("a_first", CSource.routes(
            name: "first", patterns: ["dup://x-callback-url/go", "dup://items/:id"]))
        // Returns the failing status, as the plug-in guide recommends.
        let second = try directory.add("b_second", CSource.routes(
            name: "second", patterns: ["dup://x-callback-url/go"], statusSymbol: "second_status"))
        // Tolerates conflicts: registers what it can and loads.
        let third = try directory.add("c_third", CSource.routes(
            name: "third",
            patterns: ["dup://items/:name", "DUP://x-callback-url/go", "dup://items(/:other)", "dup://x-callback-url/other"],
            registerStatus: "XCALLBACK_OK", statusSymbol: "third_status"))
        let log = LogCapture()
        let host = try loadedHost([directory.path], log: log)

        #expect(host.plugins.map(\.path) == [first, second, third])
        let firstStatus = try #require(host.status(of: first))
        #expect(firstStatus.isLoaded)
        #expect(firstStatus.routes.map(\.text) == ["dup://x-callback-url/go", "dup://items/:id"])

        let conflict = Int32(XCALLBACK_ERR_ROUTE_CONFLICT)
        let secondStatus = try #require(host.status(of: second))
        #expect(!secondStatus.isLoaded)
        #expect(secondStatus.error?.reason == .registrationFailed(status: conflict))
        #expect(try loadedSymbol("second_status", in: second, as: CIntOfIntFunction.self)(0) == conflict)

        let thirdStatus = try #require(host.status(of: third))
        #expect(thirdStatus.isLoaded)
        #expect(thirdStatus.routes.map(\.text) == ["dup://x-callback-url/other"])
        let status = try loadedSymbol("third_status", in: third, as: CIntOfIntFunction.self)
        // Same shape whatever the argument name; scheme case-insensitive; an optional group's alternatives.
        #expect([status(0), status(1), status(2), status(3)] == [conflict, conflict, conflict, Int32(XCALLBACK_OK)])

        // The first plug-in still answers its routes.
        #expect(routeOwner(host, "dup://x-callback-url/go") == "first")
        #expect(routeOwner(host, "dup://items/42") == "first")
        #expect(routeOwner(host, "dup://x-callback-url/other") == "third")
        #expect(host.registry.owner(ofSameShapeAs: try .init("dup://items/:whatever")) == "first")
        #expect(host.registry.owner(ofSameShapeAs: try .init("dup://x-callback-url/free")) == nil)

        // The refusal is logged, naming the owner.
        #expect(log.contains("plug-in 'first' already owns a route of the same shape"), "\(log.lines)")
    }

    @Test func aFailedRegistrationLeavesNoRoutesBehind() throws {
        let directory = try PluginDirectory()
        let failing = try directory.add("a_failing", CSource.routes(
            name: "failing", patterns: ["drop://x-callback-url/go", "drop://things/:id"], registerStatus: "-7"))
        let taker = try directory.add("b_taker", CSource.routes(
            name: "taker", patterns: ["drop://x-callback-url/go", "drop://things/:name"], statusSymbol: "taker_status"))
        let host = try loadedHost([directory.path])

        #expect(host.status(of: failing)?.error?.reason == .registrationFailed(status: -7))
        #expect(host.status(of: failing)?.routes.isEmpty == true)
        #expect(host.status(of: taker)?.isLoaded == true)
        #expect(host.status(of: taker)?.routes.count == 2)
        #expect(routeOwner(host, "drop://x-callback-url/go") == "taker")
        #expect(routeOwner(host, "drop://things/1") == "taker")
    }

    @Test func aDuplicatePluginNameIsRefused() throws {
        let directory = try PluginDirectory()
        let first = try directory.add("a_one", CSource.routes(name: "twin", patterns: ["twin://x-callback-url/one"]))
        let second = try directory.add("b_two", CSource.routes(name: "twin", patterns: ["twin://x-callback-url/two"]))
        let host = try loadedHost([directory.path])
        #expect(host.status(of: first)?.isLoaded == true)
        let error = try #require(host.status(of: second)?.error)
        #expect(error.reason == .duplicateName(first))
        #expect(error.description == "\(second): a plug-in with the same name is already loaded from \(first)")
        #expect(routeOwner(host, "twin://x-callback-url/two") == nil)
    }

    // MARK: files reached twice, order, refusals

    @Test func aFileReachedTwiceIsLoadedOnce() throws {
        let directory = try PluginDirectory()
        let path = try directory.add("once", CSource.routes(name: "once", patterns: ["once://x-callback-url/go"]))
        symlink(path, directory.path + "/s_link.so")
        link(path, directory.path + "/t_hard.so")
        let alias = directory.temporary.file("alias")
        symlink(directory.path, alias)

        let log = LogCapture()
        let host = try loadedHost([directory.path, directory.path, alias], log: log)
        #expect(host.plugins.map(\.path) == [path])
        #expect(host.plugins.first?.isLoaded == true)
        #expect(!log.contains("already owns"), "registered once, so no conflict with itself")
    }

    @Test func plugInsLoadInScanOrderAndNonSOFilesAreIgnored() throws {
        let directory = try PluginDirectory()
        let other = try TemporaryDirectory()
        let otherPlugins = try other.directory("plugins")
        let c = try directory.add("c", CSource.routes(name: "c", patterns: ["order://x-callback-url/c"]))
        let a = try directory.add("a", CSource.routes(name: "a", patterns: ["order://x-callback-url/a"]))
        let b = try CCompiler.plugin("b", source: CSource.routes(name: "b", patterns: ["order://x-callback-url/b"]),
                                     in: other, into: otherPlugins)
        try directory.temporary.write("plugins/notes.txt", "not a plug-in", mode: 0o644)
        try directory.temporary.copy(a, to: "plugins/.hidden.so")
        try directory.temporary.copy(a, to: "plugins/a.so.bak")

        let host = try loadedHost([otherPlugins, directory.path])
        #expect(host.plugins.map(\.path) == [b, a, c])
        #expect(host.plugins.filter { !$0.isLoaded }.isEmpty)
        #expect(host.plugins.compactMap(\.info?.name) == ["b", "a", "c"])
    }

    @Test func insecureFileIsRefusedByTheHostAndAcceptedWhenAllowed() throws {
        let directory = try PluginDirectory()
        let path = try directory.add("open", CSource.routes(name: "open", patterns: ["open://x-callback-url/go"]))
        chmod(path, 0o666)
        let log = LogCapture()
        let host = try loadedHost([directory.path], log: log)
        let error = try #require(host.status(of: path)?.error)
        guard case .insecure = error.reason else { Issue.record("\(error)"); return }
        #expect(error.description.hasPrefix("\(path): refused: file is writable by others (mode 0666)"))
        #expect(log.contains("\(path): refused"), "\(log.lines)")
        #expect(routeOwner(host, "open://x-callback-url/go") == nil)

        let allowed = try loadedHost([directory.path], allowInsecure: true)
        #expect(allowed.status(of: path)?.isLoaded == true)
    }

    @Test func insecureDirectoryIsRefusedByTheHost() throws {
        let directory = try PluginDirectory()
        try directory.add("inside", CSource.routes(name: "inside", patterns: ["inside://x-callback-url/go"]))
        chmod(directory.path, 0o777)

        let host = makeHost([directory.path])
        let error = #expect(throws: HostSetupError.self) {
            try host.loadPlugins(requireDirectories: true)
        }
        #expect(error?.message == "unusable plug-in directory: \(directory.path): refused: directory is writable by others (mode 0777); run chmod o-w, or pass --allow-insecure-plugins")
        #expect(host.plugins.isEmpty)

        // Not required: skipped, and nothing from it is loaded.
        let lenient = makeHost([directory.path])
        try lenient.loadPlugins(requireDirectories: false)
        #expect(lenient.plugins.isEmpty)

        let allowed = try loadedHost([directory.path], allowInsecure: true)
        #expect(allowed.plugins.count == 1 && allowed.plugins[0].isLoaded)
    }

    @Test func theSamplePluginsLoadTogether() throws {
        let directory = try PluginDirectory()
        // Symlinks (judged by their targets) to private copies of the built
        // libraries. Not to the built files themselves: `LoadedPlugins` has
        // them loaded, and registering a loaded library again would point
        // its C globals (the Alert sample's `host` and `self`) at this host,
        // taking another test's log lines. Loaded code is never unloaded, so
        // the copies stay until the process exits.
        let targets = try TemporaryDirectory("xcb-sample-copies")
        ProcessLifetimeDirectories.keep(targets)
        for name in ["Alert", "Calculator", "Faulty", "Pokedex"] {
            let copy = try targets.copy(Paths.sample(name), to: "lib\(name).so")
            #expect(symlink(copy, directory.path + "/lib\(name).so") == 0)
        }
        let host = try loadedHost([directory.path])
        #expect(host.plugins.compactMap(\.info?.name) == ["alert", "calculator", "faulty", "pokedex"])
        let errors = host.plugins.compactMap(\.error)
        #expect(errors.isEmpty, "\(errors)")
        #expect(routeOwner(host, "calc://x-callback-url/add") == "calculator")
        #expect(routeOwner(host, "pokedex://pokemons/25") == "pokedex")
        #expect(routeOwner(host, "myapp://alert/show") == "alert")
        #expect(routeOwner(host, "faulty://x-callback-url/never") == "faulty")
    }
}
