/*
 * hello.c — a complete xcallback plug-in in C.
 *
 * Routes:
 *   hello://x-callback-url/greet?name=Ada  ->  success?greeting=Hello%2C%20Ada%21
 *   hello://people/Ada                     ->  the same
 *   hello://x-callback-url/greet           ->  error ParameterError (domain "hello")
 *
 * Build (see README.md):
 *   cc -std=c11 -Wall -shared -fPIC -I"$(xcallback sdk --include-dir)" hello.c -o hello.so
 *
 * The plug-in links against nothing from the host: everything it needs from
 * the host arrives as a table of function pointers in xcallback_plugin_register.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcallback.h"

/*
 * Entry point 1 of 2: the descriptor. The macro defines and exports
 * xcallback_plugin_descriptor(), returning a static descriptor stamped with
 * the ABI version of the header this file was compiled against. The name is
 * 1-64 characters of [A-Za-z0-9._-] and must be unique among loaded plug-ins;
 * it is also the error domain when a reply_error call passes a NULL domain.
 */
XCALLBACK_PLUGIN("hello", "1.0.0", "Greets people: hello://x-callback-url/greet?name=")

/*
 * The host API table, kept from registration. It is written once, before any
 * handler can run, and only read afterwards (from any thread), so it needs no
 * lock. It stays valid until xcallback_plugin_shutdown returns. (A plug-in
 * that logs from its handlers keeps the `plugin` handle the same way: log()
 * takes it.)
 */
static const xcallback_host_api *host;

/*
 * Completes `reply` with success greeting=Hello, NAME! — or with an error.
 * `name` is `length` bytes long and may be NULL (absent).
 */
static void greet(xcallback_reply reply, const char *name, size_t length)
{
    if (name == NULL) {
        /* NULL domain: the error's domain is the plug-in's name, "hello". */
        host->reply_error(reply, "ParameterError", "missing required parameter 'name'", NULL);
        return;
    }
    /* No NUL byte inside: the host answers a request holding one (raw or
     * as %00) InvalidURL before any plug-in sees it, so `name` is a whole C
     * string and `length` is its strlen. */

    static const char format[] = "Hello, %s!";
    size_t size = sizeof format + length; /* room for the text, "%s" unused */
    char *greeting = malloc(size);
    if (greeting == NULL) {
        host->reply_error(reply, "OutOfMemory", "cannot allocate the greeting", NULL);
        return;
    }
    snprintf(greeting, size, format, name);

    /* The host copies every name and value before reply_success returns, so
     * the buffer can be freed right after. */
    const xcallback_param output[] = { { "greeting", greeting } };
    host->reply_success(reply, output, 1);
    free(greeting);
}

/*
 * Handler for hello://x-callback-url/greet?name=NAME. Called on a host thread,
 * maybe on several at once. `request` is valid until the reply is completed:
 * read everything needed from it first. Here the reply is completed before
 * the handler returns; it could also be completed later, from another thread.
 */
static void greet_action(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)user_data; /* the pointer given at registration: NULL here */
    size_t length = 0;
    const char *name = host->request_parameter(request, "name", &length);
    greet(reply, name, length);
}

/* Handler for the pattern route hello://people/:name. The `:name` argument
 * comes from the path, not from the query. */
static void greet_person(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)user_data;
    const char *name = host->request_argument(request, "name");
    greet(reply, name, name != NULL ? strlen(name) : 0);
}

/*
 * Entry point 2 of 2: registration. The host calls it once, after checking the
 * descriptor. Routes can be registered only from inside this function. Return
 * XCALLBACK_OK to load, anything else to refuse loading.
 */
XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api,
                                               xcallback_plugin *plugin)
{
    host = api;

    int rc = api->register_action(plugin, "hello", "greet", greet_action, NULL);
    if (rc != XCALLBACK_OK)
        return rc;
    rc = api->register_pattern(plugin, "hello://people/:name", greet_person, NULL);
    if (rc != XCALLBACK_OK)
        return rc;

    api->log(plugin, XCALLBACK_LOG_DEBUG, "hello is ready");
    return XCALLBACK_OK;
}

/*
 * Optional: called once before the host unloads the plug-in; no handler runs
 * after it starts. Release resources and stop any thread of your own here:
 * once this returns, the library's code may be unmapped.
 */
XCALLBACK_EXPORT void xcallback_plugin_shutdown(xcallback_plugin *plugin)
{
    host->log(plugin, XCALLBACK_LOG_DEBUG, "hello is shutting down");
}
