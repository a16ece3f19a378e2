#include <signal.h>
#include <string.h>
#include "host_support.h"

/* `xcallback run` stops gracefully on SIGTERM and SIGINT (SignalWaiter.swift
 * takes them from a signalfd), but only once they are blocked: before that,
 * their default action kills a host that may have read lines and answered
 * none. Start-up (the Swift runtime, the libraries' constructors, argument
 * parsing, loading plug-ins) takes tens of milliseconds, so a service
 * manager's stop just after a start could kill it.
 *
 * So they are blocked here, from the executable's .preinit_array: after the
 * dynamic loader has relocated the program, before any library's
 * constructor and before `main`. Nothing a program runs can be earlier.
 * Only for `run`: the other commands keep the default actions, and `run
 * --queue` keeps the mask through its exec of `xcallback-queue`. Children
 * are spawned with no signal blocked (ChildSignals.swift, the zygote's
 * fork), so the mask goes no further. glibc passes argc and argv to
 * .preinit_array functions; a section only an executable honours, and only
 * the binaries link this file. */

void xcallback_host_signal_set(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    /* Its default action would otherwise kill the host. */
    sigaddset(set, SIGUSR1);
}

static int blocked_early;

static void block_for_run(int argc, char **argv, char **environment) {
    (void)environment;
    if (argc < 2 || argv == NULL || argv[1] == NULL || strcmp(argv[1], "run") != 0) return;
    sigset_t set;
    xcallback_host_signal_set(&set);
    if (sigprocmask(SIG_BLOCK, &set, NULL) == 0) blocked_early = 1;
}

__attribute__((section(".preinit_array"), used))
static void (*const xcallback_preinit_block_for_run)(int, char **, char **) = block_for_run;

int xcallback_host_signals_blocked_early(void) {
    return blocked_early;
}
