/// A plug-in that completes its fast-lane calls from other threads: late,
/// twice, as its handler returns, or with a decline (red-team tests of the
/// lanes' reply slots, `SynchronousSlot`). Built by the tests with `cc`.
enum LaneRacePlugin {
    static let name = "racer"

    static let source = #"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("racer", "1.0.0", "Completes its calls from other threads, late, twice or declining")

static const xcallback_host_api *host;

/* Every thread started, joined at shutdown: none may run this library's
 * code once it is unloaded. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t *threads;
static size_t thread_count, thread_room;

typedef struct {
    xcallback_reply reply;
    long delay_us;
    int how; /* 's' success, 'c' cancel, 'e' error, 'd' decline, '2' a second success */
} job;

static void *complete_later(void *argument) {
    job *j = argument;
    if (j->delay_us > 0) usleep((useconds_t)j->delay_us);
    const xcallback_param param[] = { { "by", "thread" } };
    switch (j->how) {
    case 's': case '2': host->reply_success(j->reply, param, 1); break;
    case 'c': host->reply_cancel(j->reply); break;
    case 'e': host->reply_error(j->reply, "Late", "from a thread", NULL); break;
    case 'd': host->reply_decline(j->reply); break;
    }
    free(j);
    return NULL;
}

static int start(xcallback_reply reply, long delay_us, int how) {
    job *j = malloc(sizeof *j);
    if (j == NULL) return -1;
    j->reply = reply; j->delay_us = delay_us; j->how = how;
    pthread_mutex_lock(&lock);
    if (thread_count == thread_room) {
        size_t room = thread_room ? 2 * thread_room : 64;
        pthread_t *grown = realloc(threads, room * sizeof *grown);
        if (grown == NULL) { pthread_mutex_unlock(&lock); free(j); return -1; }
        threads = grown; thread_room = room;
    }
    int rc = pthread_create(&threads[thread_count], NULL, complete_later, j);
    if (rc == 0) thread_count++;
    pthread_mutex_unlock(&lock);
    if (rc != 0) free(j);
    return rc;
}

static long number(const xcallback_request *request, const char *name, long otherwise) {
    size_t length = 0;
    const char *value = host->request_parameter(request, name, &length);
    return value ? atol(value) : otherwise;
}

/* twice?us=N: answers now, then a thread answers again N us later. */
static void twice(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    long us = number(request, "us", 0);
    const xcallback_param param[] = { { "by", "handler" } };
    host->reply_success(reply, param, 1);
    if (start(reply, us, '2') != 0) return;
}

/* other?how=s|c|e|d&us=N&hold=M: a thread completes N us from now; the
 * handler returns M us from now (so either may come first). */
static void other(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    long us = number(request, "us", 0), hold = number(request, "hold", 0);
    size_t length = 0;
    const char *how = host->request_parameter(request, "how", &length);
    if (start(reply, us, how && how[0] ? how[0] : 's') != 0) {
        host->reply_error(reply, "NoThread", "cannot start a thread", NULL);
        return;
    }
    if (hold > 0) usleep((useconds_t)hold);
}

/* slow?hold=N&v=V: answers v=V (and fixed awkward bytes) on its own thread
 * after N us, so a metrics scrape finds it running. */
static void slow(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    long hold = number(request, "hold", 0);
    if (hold > 0) usleep((useconds_t)hold);
    size_t length = 0;
    const char *v = host->request_parameter(request, "v", &length);
    const xcallback_param params[] = { { "v", v ? v : "" }, { "odd name/\xc3\xa9", "a b&c=d+e#f?%" }, { "empty", NULL } };
    host->reply_success(reply, params, 3);
}

/* The route a decline falls through to. */
static void fallback(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    const xcallback_param param[] = { { "by", "fallback" } };
    host->reply_success(reply, param, 1);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    if (api == NULL || api->abi_major != XCALLBACK_ABI_MAJOR) return XCALLBACK_ERR_INVALID_ARGUMENT;
    host = api;
    int rc = api->register_action(plugin, "racer", "twice", twice, NULL);
    if (rc == XCALLBACK_OK) rc = api->register_action(plugin, "racer", "other", other, NULL);
    if (rc == XCALLBACK_OK) rc = api->register_action(plugin, "racer", "slow", slow, NULL);
    if (rc == XCALLBACK_OK) rc = api->register_pattern(plugin, "racer://x-callback-url/:action", fallback, NULL);
    return rc;
}

XCALLBACK_EXPORT void xcallback_plugin_shutdown(xcallback_plugin *plugin) {
    (void)plugin;
    pthread_mutex_lock(&lock);
    pthread_t *all = threads;
    size_t count = thread_count;
    threads = NULL; thread_count = thread_room = 0;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < count; i++) pthread_join(all[i], NULL);
    free(all);
}
"""#
}
