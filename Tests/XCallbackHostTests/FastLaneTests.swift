import Testing
@testable import XCallbackHost

/// The fast lane (`Dispatcher.submitFast`): a native handler in the host
/// process that answers before it returns goes from line to record without
/// the general path. Every other way a handler can behave must end exactly
/// as on the general path; these run each through a real Host.
@Suite("Fast lane", .ownThreads)
struct FastLaneTests {
    static let source = """
        #include <pthread.h>
        #include <string.h>
        #include <time.h>
        #include "xcallback.h"

        XCALLBACK_PLUGIN("fastlane", "1.0.0", "answers in every way a handler can")

        static const xcallback_host_api *host;

        static void now(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)data;
            size_t length = 0;
            const char *text = host->request_parameter(request, "text", &length);
            xcallback_param params[] = { { "route", host->request_route(request) }, { "text", text ? text : "" } };
            host->reply_success(reply, params, 2);
        }

        static void *answer_later(void *token) {
            struct timespec pause = { 0, 20 * 1000 * 1000 };
            nanosleep(&pause, NULL);
            xcallback_reply reply = { (uint64_t)(uintptr_t)token };
            xcallback_param param = { "when", "later" };
            host->reply_success(reply, &param, 1);
            return NULL;
        }

        /* Keeps its reply past its return and answers from another thread. */
        static void later(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            pthread_t thread;
            pthread_create(&thread, NULL, answer_later, (void *)(uintptr_t)reply.token);
            pthread_detach(thread);
        }

        /* Runs past the host's deadline: bounded, so the test always ends. */
        static void hold(void) {
            struct timespec pause = { 1, 500 * 1000 * 1000 };
            nanosleep(&pause, NULL);
        }

        static void block(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            hold();
            host->reply_success(reply, NULL, 0);   /* too late: dropped, and logged */
        }

        static void answer_then_block(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            xcallback_param param = { "answered", "first" };
            host->reply_success(reply, &param, 1);
            hold();
        }

        static void decline_then_block(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            host->reply_decline(reply);
            hold();
        }

        static void fallback(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            xcallback_param param = { "by", "fallback" };
            host->reply_success(reply, &param, 1);
        }

        static void twice(const xcallback_request *request, xcallback_reply reply, void *data) {
            (void)request; (void)data;
            host->reply_cancel(reply);
            host->reply_cancel(reply);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            int rc = 0;
            rc |= api->register_action(plugin, "fast", "now", now, NULL);
            rc |= api->register_action(plugin, "fast", "later", later, NULL);
            rc |= api->register_action(plugin, "fast", "block", block, NULL);
            rc |= api->register_action(plugin, "fast", "answer-then-block", answer_then_block, NULL);
            rc |= api->register_action(plugin, "fast", "twice", twice, NULL);
            rc |= api->register_action(plugin, "fast", "decline-then-block", decline_then_block, NULL);
            rc |= api->register_pattern(plugin, "fast://x-callback-url/:anything", fallback, NULL);
            return rc;
        }
        """

    /// Runs `lines` through an in-process host with a short timeout (shorter
    /// than the 1.5 s a blocking handler holds on); returns the records.
    /// A test that needs an answer before the timeout, not a `Timeout`,
    /// asks for a longer one: on a loaded machine 300 ms was missed.
    private func run(_ lines: [String], keepOrder: Bool = false, timeout: Duration = .milliseconds(300)) throws -> [String] {
        try serveThroughHost(plugin: "fastlane", source: Self.source, lines: lines) { configuration in
            configuration.timeout = timeout
            configuration.keepOrder = keepOrder
        }
    }

    @Test("a handler that answers at once: the record, with the route and a decoded value")
    func answersAtOnce() throws {
        let records = try run(["FAST://X-Callback-URL/now?text=caf%C3%A9%20au%20lait&x-success=app%3A%2F%2Fdone"])
        #expect(records == ["app://done?route=fast%3A%2F%2Fx-callback-url%2Fnow&text=caf%C3%A9%20au%20lait"])
    }

    @Test("a handler that keeps its reply is answered when it completes, from another thread")
    func keptReply() throws {
        let records = try run(["fast://x-callback-url/later", "fast://x-callback-url/now?text=next"], keepOrder: true,
                              timeout: .seconds(1))
        #expect(records == ["success?when=later", "success?route=fast%3A%2F%2Fx-callback-url%2Fnow&text=next"])
    }

    @Test("a handler running past its deadline is answered Timeout while it runs; later lines go on")
    func timeoutWhileRunning() throws {
        let records = try run(["fast://x-callback-url/block?x-error=app://failed", "fast://x-callback-url/now?text=meanwhile"])
        #expect(records.count == 2, "\(records)")
        #expect(records.contains("success?route=fast%3A%2F%2Fx-callback-url%2Fnow&text=meanwhile"), "\(records)")
        #expect(records.contains { $0.hasPrefix("app://failed?errorCode=Timeout&") }, "\(records)")
    }

    @Test("a handler that answers, then runs past its deadline: its answer, not Timeout")
    func answerThenBlock() throws {
        let records = try run(["fast://x-callback-url/answer-then-block"])
        #expect(records == ["success?answered=first"])
    }

    @Test("a handler that declines, then runs on past its deadline: the next route answers at once, as on the general path")
    func declineThenBlock() throws {
        let records = try run(["fast://x-callback-url/decline-then-block", "fast://x-callback-url/other"], keepOrder: true,
                              timeout: .seconds(1))
        #expect(records == ["success?by=fallback", "success?by=fallback"], "\(records)")
    }

    @Test("a callback to the host's own scheme is the next hop; a second completion is refused")
    func chainsAndDoubleCompletion() throws {
        let records = try run([
            "fast://x-callback-url/now?text=one&x-success=fast%3A%2F%2Fx-callback-url%2Fnow%3Ftext%3Dtwo",
            "fast://x-callback-url/twice?x-cancel=app://cancelled",
        ], keepOrder: true)
        // The second hop reads the first `text` of its URL: its own.
        #expect(records == ["success?route=fast%3A%2F%2Fx-callback-url%2Fnow&text=two", "app://cancelled"], "\(records)")
    }
}
