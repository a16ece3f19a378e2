import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 41, item 5: what `check`, `plugins` and `routes` show is what
/// `run` registers. They learn a plug-in from a worker started as `run`
/// starts it, through the same handshake (`PluginProbe`): a report written
/// on some other descriptor is the plug-in's output, and a handshake it
/// forges on the worker's socket gets it refused by both.
@Suite("the listing shows what run registers", .ownThreads)
struct ListingMatchesRunTests {
    /// A folder holding the forger alone (its real route is the sample
    /// calculator's, which is not there).
    private static func forger(frames: Bool) throws -> (fixture: HostFixture, library: String) {
        let fixture = try HostFixture([], isolation: "process")
        let library = try TestPlugin.build(ForgerPlugin.name, source: ForgerPlugin.source(frames: frames), into: fixture.plugins)
        return (fixture, library)
    }

    private static let request = ForgerPlugin.realRoute + "?a=1&b=2"

    @Test("a report written on every descriptor: the listing shows the real plug-in and route, and run answers from it",
          .scaledTimeLimit(minutes: 1))
    func reportOnEveryDescriptor() throws {
        let (fixture, library) = try Self.forger(frames: false)

        let check = try xcallback(["check", library])
        #expect(check.status == .exited(0), "\(check.stderr)")
        #expect(check.lines.first?.hasPrefix("forger 1.0.0 (ABI 1.") == true, "\(check.stdout)")
        #expect(Array(check.lines.dropFirst()) == [ForgerPlugin.realRoute], "\(check.stdout)")

        let plugins = try xcallback(["plugins", "--plugins", fixture.plugins, "--json"])
        #expect(plugins.status == .exited(0), "\(plugins.stderr)")
        let objects = try plugins.lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.count == 1)
        #expect(objects.first?["status"] as? String == "loaded")
        #expect(objects.first?["name"] as? String == ForgerPlugin.name)
        #expect(objects.first?["routes"] as? Int == 1)

        let routes = try xcallback(["routes", "--plugins", fixture.plugins])
        #expect(routes.status == .exited(0), "\(routes.stderr)")
        let own = routes.lines.filter { !$0.hasSuffix("(built in)") }
        #expect(own == ["\(ForgerPlugin.realRoute) → \(ForgerPlugin.name)"], "\(routes.stdout)")

        for output in [check.stdout, plugins.stdout, routes.stdout] {
            #expect(!output.contains("harmless"), "\(output)")
        }

        // What run registers: the same route, answered by the plug-in.
        let run = try fixture.run(["--output", "jsonl"], lines: [Self.request, ForgerPlugin.forgedRoute])
        #expect(run.status == .exited(0), "\(run.stderr)")
        let records = try run.records()
        #expect(records.first { $0.input == Self.request }?.params["result"] == "from-forger", "\(records)")
        #expect(records.first { $0.input == ForgerPlugin.forgedRoute }?.errorCode?.hasPrefix("NotFound") == true, "\(records)")
    }

    @Test("a handshake forged on the worker's socket: the listing refuses the plug-in, and run answers none of its routes",
          .scaledTimeLimit(minutes: 2))
    func handshakeOnTheSocket() throws {
        let (fixture, library) = try Self.forger(frames: true)

        let check = try xcallback(["check", library])
        #expect(check.status != .exited(0), "\(check.stdout)")
        #expect(check.stdout.isEmpty, "\(check.stdout)")
        #expect(check.stderr.contains("its worker wrote frames after its handshake"), "\(check.stderr)")

        let plugins = try xcallback(["plugins", "--plugins", fixture.plugins, "--json"])
        let objects = try plugins.lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.count == 1)
        #expect(objects.first?["status"] as? String == "rejected", "\(plugins.stdout)")
        #expect(objects.first?["name"] is NSNull, "\(plugins.stdout)")

        let routes = try xcallback(["routes", "--plugins", fixture.plugins])
        #expect(routes.lines.allSatisfy { $0.hasSuffix("(built in)") }, "\(routes.stdout)")

        for output in [check.stdout, plugins.stdout, routes.stdout] {
            #expect(!output.contains("harmless://"), "\(output)")
        }

        // Run: whatever it took in, no route of the plug-in answers: its
        // worker is ended as soon as its own `ready` follows the forged one.
        let run = try fixture.run(["--output", "jsonl", "--timeout", "5"], lines: [ForgerPlugin.forgedRoute, Self.request],
                                  timeout: TestTiming.scaled(60))
        #expect(run.status == .exited(0), "\(run.stderr)")
        let records = try run.records()
        #expect(records.count == 2, "\(records)")
        #expect(records.allSatisfy { $0.outcome == "error" }, "\(records)")
    }

    /// The worker's sandbox supervisor is the probe's too: a constructor
    /// the sandbox ends is named as `run` names it (it was "crashed while
    /// loading (signal 31)" from a probe with no supervisor).
    @Test("a constructor its sandbox ends: check names the call, as run does", .scaledTimeLimit(minutes: 1))
    func sandboxEndsAConstructor() throws {
        let fixture = try HostFixture([], isolation: "process")
        // SIGCONT to its parent: harmless should it ever get through.
        let library = try TestPlugin.build("signaller", source: """
            #include <signal.h>
            #include <unistd.h>
            #include "xcallback.h"
            XCALLBACK_PLUGIN("signaller", "1.0.0", "signals its parent while it loads")
            __attribute__((constructor)) static void on_load(void) { kill(getppid(), SIGCONT); }
            static void ok(const xcallback_request *r, xcallback_reply reply, void *u) { (void)r, (void)reply, (void)u; }
            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
            {
                return api->register_action(plugin, "sig", "ok", ok, NULL);
            }
            """, into: fixture.plugins)
        let said = "the worker was ended by its sandbox for a forbidden system call (kill) before it was ready"
        let check = try xcallback(["check", library])
        #expect(check.status != .exited(0))
        #expect(check.stderr.contains("\(library): \(said)"), "\(check.stderr)")
        let run = try fixture.run([], lines: ["sig://x-callback-url/ok"])
        #expect(run.stderr.contains(said), "\(run.stderr)")
        #expect(run.stdout.contains("errorCode=NotFound"), "\(run.stdout)")
    }
}
