import Testing
@testable import XCallbackHost

/// docs/routing-and-isolation.md: a handler may decline; the next matching route (literal,
/// then argument, then wildcard) is tried, and NotFoundAction follows the
/// last. Run through a real Host, dispatcher and route table.
@Suite("Declining handlers", .ownThreads)
struct DeclineTests {
    static let source = """
        #include <string.h>
        #include "xcallback.h"

        XCALLBACK_PLUGIN("decliner", "1.0.0", "declines on purpose")

        static const xcallback_host_api *host;

        static void decline(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            host->reply_decline(reply);
        }

        static void answer(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request;
            xcallback_param param = { "by", (const char *)data };
            host->reply_success(reply, &param, 1);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            int rc = 0;
            rc |= api->register_pattern(plugin, "dec://x-callback-url/item", decline, NULL);
            rc |= api->register_pattern(plugin, "dec://x-callback-url/:name", answer, (void *)"argument");
            rc |= api->register_pattern(plugin, "dec://x-callback-url/*", answer, (void *)"wildcard");
            rc |= api->register_pattern(plugin, "dec://only/one", decline, NULL);
            return rc;
        }
        """

    @Test func aDeclinedRequestFallsToTheNextRouteThenToNotFound() throws {
        let lines = try serveThroughHost(plugin: "decliner", source: Self.source, lines: [
            "dec://x-callback-url/item",
            "dec://x-callback-url/other",
            "dec://x-callback-url/a/b",
            "dec://only/one",
        ])
        try #require(lines.count == 4, "\(lines)")
        // The literal route declines: the argument route answers.
        #expect(lines[0] == "success?by=argument")
        #expect(lines[1] == "success?by=argument")
        #expect(lines[2] == "success?by=wildcard")
        // The only route declines: nothing is left.
        #expect(lines[3].hasPrefix("error?errorCode=NotFoundAction&errorMessage=every%20matching%20route%20declined"), "\(lines[3])")
    }
}
