/*
 * Faulty — a plug-in that misbehaves on purpose, for the host's isolation
 * tests. Every action is `faulty://x-callback-url/<action>`:
 *
 *   crash    dies by SIGSEGV (a real invalid memory access)
 *   abort    calls abort(): dies by SIGABRT
 *   exit     calls _exit(3): the process ends with status 3, no atexit
 *            handlers, no stdio flush
 *   hang     never returns (sleeps in pause(), burns no CPU)
 *   never    returns without ever completing its reply
 *   sleep    ?ms=N (0 to 86400000): returns at once; another thread completes
 *            success with slept=N after N milliseconds. Missing or invalid
 *            ms is a ParameterError
 *   fail     error Failed, "the faulty plug-in failed on purpose", domain faulty
 *   cancel   cancels
 *   noise    prints one line to stdout (flushed) and one to stderr, then
 *            succeeds with no parameters
 *   twice    completes success twice: completion=1, then completion=2 (the
 *            host keeps the first and ignores, and logs, the second)
 *
 * Never load it into a host you care about with --isolation none.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("faulty", "1.0.0", "Misbehaves on purpose: crash, abort, exit, hang, never, sleep, fail, cancel, noise, twice")

/* Set in xcallback_plugin_register, before any handler can run; only read
 * afterwards. Valid until xcallback_plugin_shutdown returns. */
static const xcallback_host_api *host;
static xcallback_plugin *self;

#define FAULTY_MAX_SLEEP_MS 86400000UL /* one day */

/* ------------------------------------------------------------------------ */
/* Deaths                                                                    */
/* ------------------------------------------------------------------------ */

static void faulty_crash(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)request, (void)reply, (void)user_data;
    host->log(self, XCALLBACK_LOG_WARNING, "crash: dereferencing NULL (SIGSEGV) on purpose");

    /* Read through a volatile pointer the compiler cannot prove is NULL, and
     * store through a volatile lvalue it may not drop: a real fault at any
     * optimisation level. The kernel delivers a fault's SIGSEGV even when the
     * signal is blocked or ignored, so the process dies by SIGSEGV unless a
     * handler is installed (which then gets its chance, as for any crash). */
    volatile int *volatile null_pointer = NULL;
    *null_pointer = 42;

    /* Only reached if page zero is mapped, or a handler skipped the fault:
     * die by SIGSEGV anyway. */
    struct sigaction default_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(SIGSEGV, &default_action, NULL);
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    pthread_sigmask(SIG_UNBLOCK, &segv, NULL);
    raise(SIGSEGV);
    abort();
}

static void faulty_abort(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)request, (void)reply, (void)user_data;
    host->log(self, XCALLBACK_LOG_WARNING, "abort: calling abort() on purpose");
    abort();
}

static void faulty_exit(const xcallback_request *request, xcallback_reply reply,
                        void *user_data)
{
    (void)request, (void)reply, (void)user_data;
    host->log(self, XCALLBACK_LOG_WARNING, "exit: calling _exit(3) on purpose");
    _exit(3);
}

/* ------------------------------------------------------------------------ */
/* Handlers that never finish                                                */
/* ------------------------------------------------------------------------ */

static void faulty_hang(const xcallback_request *request, xcallback_reply reply,
                        void *user_data)
{
    (void)request, (void)reply, (void)user_data;
    host->log(self, XCALLBACK_LOG_WARNING, "hang: never returning, on purpose");
    for (;;)
        pause(); /* returns only after a signal handler ran: sleep again */
}

static void faulty_never(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)request, (void)reply, (void)user_data;
    host->log(self, XCALLBACK_LOG_WARNING, "never: returning without completing, on purpose");
}

/* ------------------------------------------------------------------------ */
/* sleep?ms=N: completion from another thread, later                        */
/* ------------------------------------------------------------------------ */

/*
 * Each sleep runs on its own thread, which completes the reply and ends. The
 * threads are joinable rather than detached, and xcallback_plugin_shutdown
 * wakes and joins every one still alive: a detached thread could still be
 * running this library's code when the host unloads it (dlclose), and then
 * crash the host. Finished threads are joined (reaped) by the next sleep
 * request, so they never pile up.
 */
typedef struct sleeper {
    struct sleeper *next;
    pthread_t thread;
    xcallback_reply reply;
    unsigned long ms;
    int finished; /* guarded by sleepers_lock */
} sleeper;

static pthread_mutex_t sleepers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleepers_wake; /* CLOCK_MONOTONIC; set up by init_wake */
static pthread_once_t sleepers_once = PTHREAD_ONCE_INIT;
static int sleepers_ready;    /* init_wake succeeded */
static sleeper *sleepers;     /* every thread not yet joined; guarded */
static int shutting_down;     /* guarded by sleepers_lock */

static void init_wake(void)
{
    pthread_condattr_t attributes;
    if (pthread_condattr_init(&attributes) != 0)
        return;
    if (pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC) == 0 &&
        pthread_cond_init(&sleepers_wake, &attributes) == 0)
        sleepers_ready = 1;
    pthread_condattr_destroy(&attributes);
}

static void *sleeper_main(void *argument)
{
    sleeper *s = argument;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)(s->ms / 1000);
    deadline.tv_nsec += (long)(s->ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }

    int interrupted = 0;
    pthread_mutex_lock(&sleepers_lock);
    for (;;) {
        if (shutting_down) {
            interrupted = 1;
            break;
        }
        int rc = pthread_cond_timedwait(&sleepers_wake, &sleepers_lock, &deadline);
        if (rc == ETIMEDOUT)
            break;
        /* 0 (a broadcast or a spurious wake-up) or EINTR: check and wait on. */
    }
    pthread_mutex_unlock(&sleepers_lock);

    /* Complete outside the lock. The host API stays valid: shutdown joins
     * this thread before it returns. */
    if (interrupted) {
        host->reply_error(s->reply, "Interrupted",
                          "the plug-in was shut down before the sleep ended", NULL);
    } else {
        char slept[24];
        snprintf(slept, sizeof slept, "%lu", s->ms);
        const xcallback_param output[] = { { "slept", slept } };
        host->reply_success(s->reply, output, 1);
    }

    pthread_mutex_lock(&sleepers_lock);
    s->finished = 1;
    pthread_mutex_unlock(&sleepers_lock);
    return NULL;
}

/* Joins and frees every sleeper in `list`. */
static void join_all(sleeper *list)
{
    while (list != NULL) {
        sleeper *next = list->next;
        pthread_join(list->thread, NULL);
        free(list);
        list = next;
    }
}

/* Joins the threads that have finished (their join does not block). */
static void reap_finished(void)
{
    sleeper *done = NULL;
    pthread_mutex_lock(&sleepers_lock);
    for (sleeper **link = &sleepers; *link != NULL;) {
        sleeper *s = *link;
        if (s->finished) {
            *link = s->next;
            s->next = done;
            done = s;
        } else {
            link = &s->next;
        }
    }
    pthread_mutex_unlock(&sleepers_lock);
    join_all(done);
}

/* Parses a decimal integer in [0, FAULTY_MAX_SLEEP_MS]: digits only, no sign,
 * no spaces. Returns 0 on success. */
static int parse_ms(const char *text, size_t length, unsigned long *ms)
{
    if (text == NULL || length == 0)
        return -1;
    unsigned long value = 0;
    for (size_t i = 0; i < length; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        value = value * 10 + (unsigned long)(text[i] - '0');
        if (value > FAULTY_MAX_SLEEP_MS) /* checked each digit: no overflow */
            return -1;
    }
    *ms = value;
    return 0;
}

static void faulty_sleep(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)user_data;
    size_t length = 0;
    unsigned long ms;
    /* Read the request now: the thread below only needs the number. */
    const char *text = host->request_parameter(request, "ms", &length);
    if (text == NULL) {
        host->reply_error(reply, "ParameterError", "missing required parameter 'ms'", NULL);
        return;
    }
    if (parse_ms(text, length, &ms) != 0) {
        host->reply_error(reply, "ParameterError",
                          "parameter 'ms' must be an integer from 0 to 86400000", NULL);
        return;
    }

    reap_finished();
    pthread_once(&sleepers_once, init_wake);
    if (!sleepers_ready) {
        host->reply_error(reply, "ResourceError", "cannot set up a condition variable", NULL);
        return;
    }
    sleeper *s = calloc(1, sizeof *s);
    if (s == NULL) {
        host->reply_error(reply, "ResourceError", "out of memory", NULL);
        return;
    }
    s->reply = reply;
    s->ms = ms;

    /* Holding the lock across pthread_create: the new thread cannot mark
     * itself finished before it is on the list. */
    pthread_mutex_lock(&sleepers_lock);
    int rc = pthread_create(&s->thread, NULL, sleeper_main, s);
    if (rc == 0) {
        s->next = sleepers;
        sleepers = s;
    }
    pthread_mutex_unlock(&sleepers_lock);

    if (rc != 0) {
        free(s);
        char message[96];
        snprintf(message, sizeof message, "cannot start a thread: %s", strerror(rc));
        host->reply_error(reply, "ResourceError", message, NULL);
    }
    /* Return at once; the thread completes the reply. */
}

/* ------------------------------------------------------------------------ */
/* Ordinary outcomes                                                         */
/* ------------------------------------------------------------------------ */

static void faulty_fail(const xcallback_request *request, xcallback_reply reply,
                        void *user_data)
{
    (void)request, (void)user_data;
    host->reply_error(reply, "Failed", "the faulty plug-in failed on purpose", NULL);
}

static void faulty_cancel(const xcallback_request *request, xcallback_reply reply,
                          void *user_data)
{
    (void)request, (void)user_data;
    host->reply_cancel(reply);
}

static void faulty_noise(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)request, (void)user_data;
    /* Exactly what a plug-in must not do: the host keeps it off its stdout. */
    printf("faulty: noise on stdout\n");
    fflush(stdout);
    fprintf(stderr, "faulty: noise on stderr\n");
    fflush(stderr);
    host->reply_success(reply, NULL, 0);
}

static void faulty_twice(const xcallback_request *request, xcallback_reply reply,
                         void *user_data)
{
    (void)request, (void)user_data;
    const xcallback_param first[] = { { "completion", "1" } };
    const xcallback_param second[] = { { "completion", "2" } };
    host->reply_success(reply, first, 1);
    /* The request is no longer valid here, but the reply token is a plain
     * value: the host answers XCALLBACK_ERR_ALREADY_COMPLETED and logs it. */
    (void)host->reply_success(reply, second, 1);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

static const struct {
    const char *action;
    xcallback_handler handler;
} actions[] = {
    { "crash", faulty_crash },   { "abort", faulty_abort },
    { "exit", faulty_exit },     { "hang", faulty_hang },
    { "never", faulty_never },   { "sleep", faulty_sleep },
    { "fail", faulty_fail },     { "cancel", faulty_cancel },
    { "noise", faulty_noise },   { "twice", faulty_twice },
};

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api,
                                               xcallback_plugin *plugin)
{
    if (api == NULL || api->abi_major != XCALLBACK_ABI_MAJOR)
        return XCALLBACK_ERR_INVALID_ARGUMENT;
    host = api;
    self = plugin;

    pthread_mutex_lock(&sleepers_lock);
    shutting_down = 0;
    pthread_mutex_unlock(&sleepers_lock);

    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        int rc = api->register_action(plugin, "faulty", actions[i].action,
                                      actions[i].handler, NULL);
        if (rc != XCALLBACK_OK)
            return rc;
    }
    return XCALLBACK_OK;
}

XCALLBACK_EXPORT void xcallback_plugin_shutdown(xcallback_plugin *plugin)
{
    (void)plugin;
    /* Wake every sleeper (each completes its reply with Interrupted) and wait
     * until none is left running code from this library. */
    pthread_mutex_lock(&sleepers_lock);
    shutting_down = 1;
    if (sleepers != NULL) /* then init_wake has run, and succeeded */
        pthread_cond_broadcast(&sleepers_wake);
    sleeper *list = sleepers;
    sleepers = NULL;
    pthread_mutex_unlock(&sleepers_lock);
    join_all(list);
}
