import Foundation
import XCallbackHost
@testable import XCallbackSystem

/// A C plug-in that exercises every function of the host API table and
/// reports what it saw, either in its reply or through exported hooks that
/// the tests call with `dlsym`. Compiled once per test process.
enum ABITestPlugin {
    static let source = #"""
    #include <stdio.h>
    #include <string.h>

    #include "xcallback.h"

    XCALLBACK_PLUGIN("abitest", "2.5.1", "Exercises the host API table")

    static const xcallback_host_api *host;
    static xcallback_plugin *self;
    static int marker;              /* its address is the user_data of the echo routes */
    static int statuses[32];        /* every registration status, in order */
    static int status_count;
    static unsigned api_size_seen, api_major_seen, api_minor_seen;
    static xcallback_reply saved;   /* the reply of the last `later` request */

    static void record(int status)
    {
        if (status_count < 32)
            statuses[status_count++] = status;
    }

    /* ---- handlers ---------------------------------------------------- */

    #define MAX_OUT 32

    typedef struct {
        xcallback_param items[MAX_OUT];
        char keys[MAX_OUT][16];
        char values[MAX_OUT][256];
        size_t count;
    } output;

    static void put(output *out, const char *key, const char *value)
    {
        if (out->count == MAX_OUT)
            return;
        snprintf(out->keys[out->count], sizeof out->keys[0], "%s", key);
        snprintf(out->values[out->count], sizeof out->values[0], "%s", value);
        out->items[out->count].name = out->keys[out->count];
        out->items[out->count].value = out->values[out->count];
        out->count++;
    }

    /* `value` (`length` bytes) with NUL shown as \0, then #length. */
    static void put_bytes(output *out, const char *key, const char *prefix, const char *value, size_t length)
    {
        char text[256];
        size_t used = (size_t)snprintf(text, sizeof text, "%s", prefix);
        for (size_t i = 0; i < length && used + 3 < sizeof text; i++) {
            if (value[i] == '\0') {
                text[used++] = '\\';
                text[used++] = '0';
            } else {
                text[used++] = value[i];
            }
        }
        snprintf(text + used, sizeof text - used, "#%zu", length);
        put(out, key, text);
    }

    static const char *or_null(const char *text) { return text != NULL ? text : "(null)"; }

    static void echo(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        output local; /* about 9 KB: fine on any host thread's stack */
        memset(&local, 0, sizeof local);
        output *o = &local;

        put(o, "url", or_null(host->request_url(request)));
        put(o, "scheme", or_null(host->request_scheme(request)));
        put(o, "source", or_null(host->request_source(request)));

        size_t count = host->request_parameter_count(request);
        char number[32];
        snprintf(number, sizeof number, "%zu", count);
        put(o, "count", number);
        for (size_t i = 0; i < count && i < 8; i++) {
            size_t length = 12345;
            const char *name = host->request_parameter_name(request, i);
            const char *value = host->request_parameter_value(request, i, &length);
            char key[16], prefix[128];
            snprintf(key, sizeof key, "p%zu", i);
            snprintf(prefix, sizeof prefix, "%s=", or_null(name));
            if (value == NULL)
                put(o, key, "(null value)");
            else
                put_bytes(o, key, prefix, value, length);
        }
        size_t past = 777;
        int past_end_null = host->request_parameter_name(request, count) == NULL
            && host->request_parameter_value(request, count, &past) == NULL
            && host->request_parameter_value(request, (size_t)-1, NULL) == NULL;
        put(o, "past_end", past_end_null && past == 777 ? "null" : "not-null");

        size_t length = 0;
        const char *a = host->request_parameter(request, "a", &length);
        if (a != NULL) put_bytes(o, "first_a", "", a, length); else put(o, "first_a", "(null)");
        put(o, "missing", or_null(host->request_parameter(request, "missing", NULL)));
        const char *empty = host->request_parameter(request, "empty", &length);
        if (empty != NULL) put_bytes(o, "empty", "[", empty, length); else put(o, "empty", "(null)");
        const char *x_source = host->request_parameter(request, "x-source", NULL);
        put(o, "x_source_param", or_null(x_source));

        put(o, "arg_id", or_null(host->request_argument(request, "id")));
        put(o, "arg_star", or_null(host->request_argument(request, "*")));
        put(o, "arg_null_name", host->request_argument(request, NULL) == NULL ? "null" : "not-null");
        put(o, "null_request",
            host->request_url(NULL) == NULL && host->request_parameter_count(NULL) == 0
                && host->request_parameter(NULL, "a", NULL) == NULL ? "null" : "not-null");
        put(o, "user_data", user_data == &marker ? "marker" : "other");

        host->log(self, XCALLBACK_LOG_DEBUG, "echo: debug");
        host->log(self, XCALLBACK_LOG_INFO, "echo: info");
        host->log(self, XCALLBACK_LOG_WARNING, "echo: warning");
        host->log(self, XCALLBACK_LOG_ERROR, "echo: error");
        host->log(NULL, XCALLBACK_LOG_ERROR, "echo: no plug-in handle");
        host->log(self, XCALLBACK_LOG_ERROR, NULL);

        int rc = host->reply_success(reply, o->items, o->count);
        (void)rc;
    }

    static void error_null_domain(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        (void)request, (void)user_data;
        /* A NULL code is refused without completing the reply. */
        int rc = host->reply_error(reply, NULL, "no code", NULL);
        if (rc != XCALLBACK_ERR_INVALID_ARGUMENT) {
            char message[64];
            snprintf(message, sizeof message, "reply_error(code: NULL) returned %d", rc);
            host->reply_error(reply, "WrongStatus", message, NULL);
            return;
        }
        host->reply_error(reply, "Oops", NULL, NULL);
    }

    static void error_domain(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        (void)request, (void)user_data;
        host->reply_error(reply, "Custom", "a message", "elsewhere");
    }

    static void decline(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        (void)request, (void)user_data;
        host->reply_decline(reply);
    }

    static void cancel(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        (void)request, (void)user_data;
        host->reply_cancel(reply);
    }

    static void success_null(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        (void)request, (void)user_data;
        host->reply_success(reply, NULL, 0);
    }

    static void copied(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        (void)request, (void)user_data;
        /* The host copies names and values before reply_success returns. */
        char name[8] = "key", value[8] = "value";
        const xcallback_param output[] = { { name, value } };
        host->reply_success(reply, output, 1);
        memset(name, 'X', sizeof name - 1);
        memset(value, 'Y', sizeof value - 1);
    }

    static void later(const xcallback_request *request, xcallback_reply reply, void *user_data)
    {
        (void)request, (void)user_data;
        saved = reply; /* completed by abitest_complete_saved() */
    }

    /* ---- hooks the tests call -------------------------------------- */

    XCALLBACK_EXPORT int abitest_status(int index)
    {
        return index >= 0 && index < status_count ? statuses[index] : 99;
    }

    XCALLBACK_EXPORT int abitest_api_size(void) { return (int)api_size_seen; }
    XCALLBACK_EXPORT int abitest_api_major(void) { return (int)api_major_seen; }
    XCALLBACK_EXPORT int abitest_api_minor(void) { return (int)api_minor_seen; }
    XCALLBACK_EXPORT int abitest_header_api_size(void) { return (int)sizeof(xcallback_host_api); }

    XCALLBACK_EXPORT int abitest_register_late(void)
    {
        return host->register_action(self, "abi", "late", echo, NULL);
    }

    XCALLBACK_EXPORT int abitest_complete_saved(void)
    {
        const xcallback_param output[] = { { "late", "yes" } };
        return host->reply_success(saved, output, 1);
    }

    /* ---- entry point ------------------------------------------------- */

    XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
    {
        host = api;
        self = plugin;
        api_size_seen = api->api_size;
        api_major_seen = api->abi_major;
        api_minor_seen = api->abi_minor;
        status_count = 0;

        record(api->register_action(plugin, "abi", "echo", echo, &marker));                   /* 0 */
        record(api->register_controller_action(plugin, "abi", "ctl", "act", echo, &marker));  /* 1 */
        record(api->register_pattern(plugin, "abi://items/:id", echo, &marker));              /* 2 */
        record(api->register_pattern(plugin, "abi://files/*", echo, &marker));                /* 3 */
        record(api->register_action(plugin, "abi", "nohandler", NULL, NULL));                 /* 4: -1 */
        record(api->register_action(NULL, "abi", "noplugin", echo, NULL));                    /* 5: -1 */
        record(api->register_action(plugin, NULL, "noscheme", echo, NULL));                   /* 6: -1 */
        record(api->register_pattern(plugin, "this is not a pattern", echo, NULL));           /* 7: -2 */
        record(api->register_pattern(plugin, NULL, echo, NULL));                              /* 8: -1 */
        record(api->register_action(plugin, "abi", ":id", echo, NULL));                       /* 9: -2 */
        record(api->register_pattern(plugin, "abi://items/(:x", echo, NULL));                 /* 10: -2 */
        record(api->register_action(plugin, "abi", "error-null-domain", error_null_domain, NULL)); /* 11 */
        record(api->register_action(plugin, "abi", "error-domain", error_domain, NULL));      /* 12 */
        record(api->register_action(plugin, "abi", "decline", decline, NULL));                /* 13 */
        record(api->register_action(plugin, "abi", "cancel", cancel, NULL));                  /* 14 */
        record(api->register_action(plugin, "abi", "success-null", success_null, NULL));      /* 15 */
        record(api->register_action(plugin, "abi", "copied", copied, NULL));                  /* 16 */
        record(api->register_action(plugin, "abi", "later", later, NULL));                    /* 17 */
        api->log(plugin, XCALLBACK_LOG_INFO, "abitest registered");
        return XCALLBACK_OK;
    }
    """#

    /// The registration statuses the plug-in records, in order.
    static let expectedStatuses: [Int32] = [0, 0, 0, 0, -1, -1, -1, -2, -1, -2, -2, 0, 0, 0, 0, 0, 0, 0]

    private static let built = Lock<Result<String, TestFailure>?>(nil)

    /// Compiles the plug-in once and returns its path (the directory stays
    /// for the life of the test process: a loaded library is never unloaded).
    static func path() throws -> String {
        try built.withLock { built in
            if let built { return try built.get() }
            let result: Result<String, TestFailure>
            do {
                let directory = try TemporaryDirectory("xcb-abitest")
                ProcessLifetimeDirectories.keep(directory)
                result = .success(try CCompiler.plugin("abitest", source: source, in: directory))
            } catch let error as TestFailure {
                result = .failure(error)
            } catch {
                result = .failure(TestFailure("\(error)"))
            }
            built = result
            return try result.get()
        }
    }

    static func load() throws -> PluginUnderTest {
        try LoadedPlugins.load(path())
    }
}

