/*
 * typed.c — typed function actions (plug-in ABI 1.1): plain C functions
 * registered with their C declaration. The host converts the URL's named
 * parameters to the declared C types, calls the function through libffi and
 * answers with its return value. No URL parsing, no reply code.
 *
 * Routes:
 *   typed://x-callback-url/add?lhs=2&rhs=4.2     ->  success?result=6.2
 *   typed://x-callback-url/clamp?value=300&low=0&high=255
 *                                                ->  success?clamped=255
 *   typed://x-callback-url/add?lhs=2             ->  error ParameterError (domain "xcallback")
 *   typed://x-callback-url/clamp?value=1e3&low=0&high=1
 *                                                ->  error ParameterError: value must be an int32_t
 *
 * Build (see README.md):
 *   cc -std=c11 -Wall -shared -fPIC -I"$(xcallback sdk --include-dir)" typed.c -o typed.so
 */
#include <stdint.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("typed", "1.0.0", "Typed function actions: typed://x-callback-url/add?lhs=&rhs=")

/* Ordinary C functions: they know nothing about URLs or replies. */
static double add(double lhs, double rhs)
{
    return lhs + rhs;
}

static int32_t clamp(int32_t value, int32_t low, int32_t high)
{
    return value < low ? low : value > high ? high : value;
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api,
                                               xcallback_plugin *plugin)
{
    /* register_function exists from ABI 1.1 on: an older host's table ends
     * before it, so check the host's minor version first. */
    if (api->abi_minor < 1) {
        api->log(plugin, XCALLBACK_LOG_ERROR, "typed needs an xcallback host with plug-in ABI 1.1");
        return XCALLBACK_ERR_INVALID_ARGUMENT;
    }

    /* The declaration must match the function exactly: the host cannot check
     * it. Parameter names are the URL parameter names. NULL: the return value
     * is answered as `result`. */
    int rc = api->register_function(plugin, "typed://x-callback-url/add",
                                    "double add(double lhs, double rhs)",
                                    (void (*)(void))add, NULL);
    if (rc != XCALLBACK_OK)
        return rc;

    /* Any route pattern works; here the result is named `clamped`. An integer
     * outside int32_t is a ParameterError, never a silent wrap. */
    return api->register_function(plugin, "typed://x-callback-url/clamp",
                                  "int32_t clamp(int32_t value, int32_t low, int32_t high)",
                                  (void (*)(void))clamp, "clamped");
}
