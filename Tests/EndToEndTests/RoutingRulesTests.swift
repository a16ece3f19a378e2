import Foundation
import Testing

/// SPEC 1 and the docs/routing-and-isolation.md, "Routes": how a request URL finds its route,
/// through the built binary in both isolation modes.
@Suite("Routing rules", .ownThreads)
struct RoutingRulesTests {
    @Test("scheme and host are case-insensitive whatever the host (SPEC 1); path segments are not",
          arguments: ["none", "process"])
    func caseInsensitiveSchemeAndHost(isolation: String) throws {
        let host = try HostFixture(["Alert", "Pokedex"], isolation: isolation)
        let result = try host.run(["-k"], lines: [
            "MYAPP://Alert/show?title=a&message=b",
            "Pokedex://POKEMONS/25",
            "myapp://alert/SHOW?title=a&message=b",
        ])
        #expect(result.status == .exited(0), "\(result.stderr)")
        #expect(result.lines.count == 3)
        #expect(result.lines.first == "success?title=a&message=b")
        #expect(result.lines.dropFirst().first == "success?name=Pikachu")
        #expect(result.lines.last?.hasPrefix("error?errorCode=NotFoundAction") == true, "\(result.lines)")
    }

    static let rootedSource = """
        #include "xcallback.h"
        XCALLBACK_PLUGIN("rooted", "1.0.0", "root routes")
        static const xcallback_host_api *host;
        static void at(const xcallback_request *request, xcallback_reply reply, void *where) {
            (void)request;
            const xcallback_param output[] = { { "at", where } };
            host->reply_success(reply, output, 1);
        }
        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            int rc = api->register_pattern(plugin, "rooted://", at, "root");
            if (rc) return rc;
            return api->register_pattern(plugin, "rooted://home", at, "home");
        }
        """

    @Test("a scheme's root route (scheme:// alone) and a host with no path can be registered and reached",
          arguments: ["none", "process"])
    func rootRoutes(isolation: String) throws {
        let host = try HostFixture([], isolation: isolation)
        try TestPlugin.build("rooted", source: Self.rootedSource, into: host.plugins)
        let result = try host.run(["-k"], lines: [
            "rooted://", "rooted://?x=1", "rooted:", "ROOTED://Home", "rooted://home/more",
        ])
        #expect(result.status == .exited(0), "\(result.stderr)")
        #expect(Array(result.lines.prefix(4)) == ["success?at=root", "success?at=root", "success?at=root", "success?at=home"])
        #expect(result.lines.last?.hasPrefix("error?errorCode=NotFoundAction") == true, "\(result.lines)")
    }
}
