/*
 * noop.c — the trivial C plug-in of the benchmark suite.
 *
 *   bench://x-callback-url/noop?...   ->  success?ok=1   (at once, one parameter)
 *
 * It reads nothing from the request, so a benchmark through it measures the
 * host alone: reading, parsing, routing, the call across the ABI, the
 * completion, and writing the record.
 *
 * NAME and SCHEME can be set at compile time (-DNAME='"x"' -DSCHEME='"x"');
 * the suite builds one copy with a fixed-width placeholder and patches the
 * bytes to make 100 distinct plug-ins for the start-up benchmark.
 */
#include "xcallback.h"

#ifndef NAME
#define NAME "bench"
#endif
#ifndef SCHEME
#define SCHEME NAME
#endif

XCALLBACK_PLUGIN(NAME, "1.0.0", "Benchmark no-op: " SCHEME "://x-callback-url/noop")

static const xcallback_host_api *host;

static void noop(const xcallback_request *request, xcallback_reply reply, void *user_data)
{
    (void)request;
    (void)user_data;
    static const xcallback_param output[] = { { "ok", "1" } };
    host->reply_success(reply, output, 1);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api,
                                               xcallback_plugin *plugin)
{
    if (api == NULL || api->abi_major != XCALLBACK_ABI_MAJOR)
        return XCALLBACK_ERR_INVALID_ARGUMENT;
    host = api;
    return api->register_action(plugin, SCHEME, "noop", noop, NULL);
}
