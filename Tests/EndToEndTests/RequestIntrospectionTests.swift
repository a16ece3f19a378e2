import Foundation
import Testing

/// ABI 1.2 (xcallback.h): a handler can learn the route that matched, every
/// route argument by index, the host's number for the request and which
/// attempt at it this is; plug-ins built against 1.1 keep loading.
@Suite("What a handler learns about its request (ABI 1.2)", .ownThreads)
struct RequestIntrospectionTests {
    static func source(minor: Int) -> String {
        """
        #include <inttypes.h>
        #include <stdio.h>
        #include <string.h>
        #include "xcallback.h"

        XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void) {
            static const xcallback_descriptor descriptor = {
                XCALLBACK_ABI_MAGIC, XCALLBACK_ABI_MAJOR, \(minor), (uint32_t)sizeof(xcallback_descriptor), 0u,
                "inspect", "1.0.0", "Tells what it learns about a request" };
            return &descriptor;
        }

        static const xcallback_host_api *host;

        static void inspect(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)unused;
            if (host->abi_minor < 2) {
                host->reply_error(reply, "OldHost", "no 1.2 accessors", NULL);
                return;
            }
            char arguments[512] = "";
            size_t count = host->request_argument_count(request);
            for (size_t i = 0; i < count; i++) {
                size_t used = strlen(arguments);
                snprintf(arguments + used, sizeof arguments - used, "%s%s=%s", i ? "," : "",
                         host->request_argument_name(request, i), host->request_argument_value(request, i));
            }
            char id[32];
            snprintf(id, sizeof id, "%" PRIu64, host->request_id(request));
            char attempt[16];
            snprintf(attempt, sizeof attempt, "%" PRIu32, host->request_attempt(request));
            const char *past = host->request_argument_name(request, count) == NULL ? "null" : "set";
            const xcallback_param output[] = {
                { "route", host->request_route(request) }, { "arguments", arguments },
                { "id", id }, { "attempt", attempt }, { "past", past },
            };
            host->reply_success(reply, output, 5);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            int rc = api->register_pattern(plugin, "inspect://items/:kind(/:id)/*", inspect, NULL);
            if (rc) return rc;
            return api->register_action(plugin, "inspect", "plain", inspect, NULL);
        }
        """
    }

    @Test("the matched route, the arguments in order, a unique request id and attempt 1, in both isolation modes",
          arguments: ["none", "process"])
    func introspection(isolation: String) throws {
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build("inspect", source: Self.source(minor: 2), into: fixture.plugins)
        let result = try fixture.run(["-k", "--output", "jsonl"], lines: [
            "inspect://items/book/42/a/b?x=1",
            "inspect://items/book",
            "inspect://x-callback-url/plain",
        ])
        #expect(result.status == .exited(0), "\(result.stderr)")
        let records = try result.records()
        try #require(records.count == 3)
        #expect(records[0].params["route"] == "inspect://items/:kind(/:id)/*")
        #expect(records[0].params["arguments"] == "kind=book,id=42,*=a/b")
        #expect(records[1].params["arguments"] == "kind=book,*=")
        #expect(records[2].params["route"] == "inspect://x-callback-url/plain")
        #expect(records[2].params["arguments"] == "")
        #expect(records.allSatisfy { $0.params["past"] == "null" })
        let ids = records.compactMap { $0.params["id"].flatMap { UInt64($0) } }
        #expect(ids.count == 3 && Set(ids).count == 3 && !ids.contains(0), "\(ids)")
        // Read from stdin, every request is a first attempt, whichever lane
        // (a request refilled in place, in the host or a worker) ran it.
        #expect(records.map { $0.params["attempt"] } == ["1", "1", "1"])
    }

    @Test("a plug-in built against ABI 1.1 still loads and runs", arguments: ["none", "process"])
    func olderMinorLoads(isolation: String) throws {
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build("inspect", source: Self.source(minor: 1), into: fixture.plugins)
        let result = try fixture.run(["--output", "jsonl"], lines: ["inspect://items/book"])
        #expect(result.status == .exited(0), "\(result.stderr)")
        #expect(try result.records().first?.params["route"] == "inspect://items/:kind(/:id)/*")
    }

    /// A plug-in whose descriptor claims `descriptorSize` and `apiSize`.
    static func misbuilt(descriptorSize: String, apiSize: String) -> String {
        source(minor: 2).replacingOccurrences(
            of: "(uint32_t)sizeof(xcallback_descriptor), 0u,",
            with: "\(descriptorSize), \(apiSize),")
    }

    @Test("a descriptor or host API of another layout is refused with the cause named, in both isolation modes",
          arguments: ["none", "process"])
    func layoutMistakesAreNamed(isolation: String) throws {
        let cases = [
            ("shortdescriptor", Self.misbuilt(descriptorSize: "32u", apiSize: "(uint32_t)sizeof(xcallback_host_api)"),
             "descriptor field 'descriptor_size' is 32, smaller than the 40 bytes of an ABI 1.2 descriptor"),
            // Built against 1.2's table before request_attempt was appended:
            // 1.2 is unreleased, so that layout is refused.
            ("shortapi", Self.misbuilt(descriptorSize: "(uint32_t)sizeof(xcallback_descriptor)", apiSize: "184u"),
             "descriptor field 'host_api_size' is 184, but ABI 1.2's xcallback_host_api is 192 bytes"),
        ]
        for (name, source, cause) in cases {
            let fixture = try HostFixture([], isolation: isolation)
            try TestPlugin.build(name, source: source, into: fixture.plugins)
            let result = try fixture.run(lines: ["inspect://items/book"])
            #expect(result.status == .exited(0))
            #expect(result.lines.first?.hasPrefix("error?errorCode=NotFoundAction") == true, "\(result.lines)")
            #expect(result.stderr.contains(cause), "\(isolation): \(result.stderr)")
            #expect(result.stderr.contains("xcallback sdk --layout"), "\(result.stderr)")
        }
    }

    static let badUTF8Source = """
        #include "xcallback.h"
        XCALLBACK_PLUGIN("mangler", "1.0.0", "Replies with bytes that are not UTF-8")
        static const xcallback_host_api *host;
        static void mangle(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)unused;
            const xcallback_param output[] = { { "v", "caf\\xe9" } };
            host->reply_success(reply, output, 1);
        }
        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            return api->register_action(plugin, "mangle", "it", mangle, NULL);
        }
        """

    @Test("a reply in invalid UTF-8 is repaired and logged with the plug-in, the request id and the route",
          arguments: ["none", "process"])
    func invalidUTF8IsNamed(isolation: String) throws {
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build("mangler", source: Self.badUTF8Source, into: fixture.plugins)
        let result = try fixture.run(lines: ["mangle://x-callback-url/it"])
        #expect(result.lines == ["success?v=caf%EF%BF%BD"], "\(result.stderr)")
        #expect(result.stderr.contains("plug-in 'mangler' replied to request 1 (route mangle://x-callback-url/it) with invalid UTF-8 in the value of parameter 'v'"),
                "\(result.stderr)")
    }
}
