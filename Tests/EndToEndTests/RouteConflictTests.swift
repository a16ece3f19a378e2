import Foundation
import Testing

/// A route another plug-in owns is refused at registration with
/// XCALLBACK_ERR_ROUTE_CONFLICT in both isolation modes (docs/routing-and-isolation.md, "Routes"):
/// a plug-in that passes the code on is refused whole, one that goes on
/// loads with its other routes. Before, a worker's registration returned OK
/// and the host dropped the route later, so the first kind loaded in process
/// mode and not in-process.
@Suite("Route conflicts", .ownThreads)
struct RouteConflictTests {
    static func source(name: String, first: String, passesConflictOn: Bool) -> String {
        """
        #include "xcallback.h"
        XCALLBACK_PLUGIN("\(name)", "1.0.0", "conflict test")
        static const xcallback_host_api *host;
        static void answer(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)unused;
            const xcallback_param output[] = { { "by", "\(name)" } };
            host->reply_success(reply, output, 1);
        }
        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            int rc = api->register_action(plugin, "\(first)", "go", answer, NULL);
            if (rc) return rc;
            rc = api->register_action(plugin, "dup", "go", answer, NULL);
            if (rc != XCALLBACK_OK && \(passesConflictOn ? 1 : 0)) return rc;
            return XCALLBACK_OK;
        }
        """
    }

    /// A folder with an owner, a plug-in that passes the conflict on, and one that goes on.
    static func conflictingFolder(isolation: String) throws -> HostFixture {
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build("a_first", source: Self.source(name: "first", first: "one", passesConflictOn: true), into: fixture.plugins)
        try TestPlugin.build("b_strict", source: Self.source(name: "strict", first: "two", passesConflictOn: true), into: fixture.plugins)
        try TestPlugin.build("c_lenient", source: Self.source(name: "lenient", first: "three", passesConflictOn: false), into: fixture.plugins)
        return fixture
    }

    @Test("check --plugins, routes and plugins show the folder as the host loads it, conflicts and the winner included")
    func listingsShowConflicts() throws {
        let fixture = try Self.conflictingFolder(isolation: "process")
        let check = try xcallback(["check", "--plugins", fixture.plugins])
        #expect(check.status == .exited(1))
        #expect(check.lines.count == 3, "\(check.stdout)")
        #expect(check.lines[0].hasPrefix("ok        first 1.0.0 (2 routes)"), "\(check.lines)")
        #expect(check.lines[1].hasPrefix("refused   ") && check.lines[1].contains("XCALLBACK_ERR_ROUTE_CONFLICT"), "\(check.lines)")
        #expect(check.lines[2].contains("lenient 1.0.0 (1 routes; 1 route refused (dup://x-callback-url/go: plug-in 'first' loaded first"),
                "\(check.lines)")
        #expect(check.stderr.contains("2 problems in \(fixture.plugins)"), "\(check.stderr)")

        let routes = try xcallback(["routes", "--plugins", fixture.plugins])
        #expect(routes.lines.contains("dup://x-callback-url/go → first"), "\(routes.lines)")
        #expect(routes.lines.contains("dup://x-callback-url/go → lenient  (refused: plug-in 'first' loaded first and owns a route of the same shape)"),
                "\(routes.lines)")
        #expect(!routes.lines.contains { $0.contains("→ strict") }, "\(routes.lines)")

        let plugins = try xcallback(["plugins", "--json", "--plugins", fixture.plugins])
        let objects = try plugins.lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.first { $0["name"] as? String == "lenient" }?["refusedRoutes"] as? Int == 1, "\(plugins.stdout)")
    }

    @Test("the same folder gives the same routes and outcomes in both isolation modes", arguments: ["none", "process"])
    func sameInBothModes(isolation: String) throws {
        let fixture = try Self.conflictingFolder(isolation: isolation)
        let result = try fixture.run(["-k"], lines: [
            "dup://x-callback-url/go", "one://x-callback-url/go", "two://x-callback-url/go", "three://x-callback-url/go",
        ])
        #expect(result.status == .exited(0), "\(result.stderr)")
        #expect(result.lines.count == 4)
        #expect(result.lines.first == "success?by=first", "\(isolation): \(result.lines)")
        #expect(result.lines.dropFirst().first == "success?by=first")
        // Passing XCALLBACK_ERR_ROUTE_CONFLICT on refuses the plug-in whole.
        #expect(result.lines.dropFirst(2).first?.hasPrefix("error?errorCode=NotFoundAction") == true, "\(isolation): \(result.lines)")
        #expect(result.lines.last == "success?by=lenient", "\(isolation): \(result.lines)")
        #expect(result.stderr.contains("plug-in 'first' already owns a route of the same shape"), "\(result.stderr)")
        #expect(result.stderr.contains("xcallback_plugin_register failed with status"), "\(result.stderr)")
    }
}
