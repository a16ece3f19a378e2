/// A plug-in that attacks the host through what it shares with its worker:
/// the descriptors a worker is started with, and the page of memory it
/// shares with the host (`WorkerProgress`). Each route answers with what it
/// saw, so a test can tell "it could" from "it could not". Built by the
/// tests with `cc`, never installed as a sample.
enum HostilePlugin {
    static let name = "hostile"

    static let source = #"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("hostile", "1.0.0", "Attacks the host through what its worker shares with it")

static const xcallback_host_api *host;

static const char *parameter(const xcallback_request *request, const char *name) {
    size_t length = 0;
    return host->request_parameter(request, name, &length);
}

static void done(xcallback_reply reply, const char *result) {
    const xcallback_param output[] = { { "result", result } };
    host->reply_success(reply, output, 1);
}

/* nonblock?ms=N: for N ms (3000 by default) a thread of its own keeps
 * O_NONBLOCK on its stdout and stderr and keeps stderr's pipe full. With
 * the host's own stderr (or stdout, under 2>&1) in its hands, the host's
 * next record write failed with EAGAIN and the host ended quietly. */
static void *keep_full(void *argument) {
    long ms = (long)argument;
    char block[4096];
    memset(block, 'n', sizeof block);
    block[sizeof block - 1] = '\n';
    for (long waited = 0; waited < ms; waited++) {
        fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
        fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_NONBLOCK);
        while (write(2, block, sizeof block) > 0) {}
        usleep(1000);
    }
    return NULL;
}

static void set_nonblocking(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *ms = parameter(request, "ms");
    pthread_t thread;
    int started = pthread_create(&thread, NULL, keep_full, (void *)(long)(ms ? atoi(ms) : 3000));
    if (started == 0) pthread_detach(thread);
    done(reply, started == 0 ? "keeping it full" : "no thread");
}

/* terminal: what a worker can do to a terminal: open /dev/tty, make its
 * group the foreground of the terminal on 0/1/2, stop its output. */
static void take_terminal(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    char text[256] = "";
    int tty = open("/dev/tty", O_RDWR | O_CLOEXEC);
    int tty_error = tty < 0 ? errno : 0;
    int ttys = 0, foreground = 0, stopped = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (isatty(fd)) ttys++;
        pid_t group = getpgrp();
        if (ioctl(fd, TIOCSPGRP, &group) == 0) foreground++;
        if (ioctl(fd, TCXONC, TCOOFF) == 0) { stopped++; ioctl(fd, TCXONC, TCOON); }
    }
    if (tty >= 0) {
        pid_t group = getpgrp();
        if (ioctl(tty, TIOCSPGRP, &group) == 0) foreground++;
        close(tty);
    }
    snprintf(text, sizeof text, "tty %s, ttys %d, foreground %d, stopped %d",
             tty >= 0 ? "opened" : strerror(tty_error), ttys, foreground, stopped);
    done(reply, text);
}

/* steal?ms=N: reads /proc/self/fd/2 reopened read-only (once the host's
 * own stderr pipe) for N ms; answers how many bytes it took and whether
 * they held another plug-in's output. */
static void steal_stderr(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *ms_text = parameter(request, "ms");
    int ms = ms_text ? atoi(ms_text) : 300;
    int fd = open("/proc/self/fd/2", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        char text[96];
        snprintf(text, sizeof text, "open: %s", strerror(errno));
        done(reply, text);
        return;
    }
    long taken = 0;
    int foreign = 0;
    char buffer[65536];
    for (int waited = 0; waited < ms; waited += 10) {
        ssize_t count = read(fd, buffer, sizeof buffer - 1);
        if (count > 0) {
            buffer[count] = 0;
            taken += count;
            if (strstr(buffer, "noise on") != NULL) foreign = 1;
        }
        usleep(10000);
    }
    close(fd);
    char text[96];
    snprintf(text, sizeof text, "took %ld, foreign %d", taken, foreign);
    done(reply, text);
}

/* truncate: ftruncate and pwrite on its stdout and stderr: when they were
 * the host's output file, records were erased and forged. */
static void truncate_output(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    const char forged[] = "success?forged=record\n";
    int truncated = 0, overwritten = 0;
    for (int fd = 1; fd <= 2; fd++) {
        if (ftruncate(fd, 0) == 0) truncated++;
        if (pwrite(fd, forged, sizeof forged - 1, 0) > 0) overwritten++;
    }
    char text[64];
    snprintf(text, sizeof text, "truncated %d, overwritten %d", truncated, overwritten);
    done(reply, text);
}

/* The page the worker shares with the host, found by its name in
 * /proc/self/maps (the worker closed the descriptor after mapping it). */
static unsigned char *shared_page(size_t *size) {
    FILE *maps = fopen("/proc/self/maps", "re");
    if (maps == NULL) return NULL;
    char line[512];
    unsigned char *page = NULL;
    while (fgets(line, sizeof line, maps) != NULL) {
        if (strstr(line, "xcallback-worker-progress") == NULL) continue;
        unsigned long start, end;
        if (sscanf(line, "%lx-%lx", &start, &end) == 2) {
            page = (unsigned char *)start;
            *size = end - start;
        }
        break;
    }
    fclose(maps);
    return page;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* page?pending=N&begun=N&memory=N&seed=S&then=crash|exit: writes the page's
 * words (pending bytes of its outbox, the last request begun, "died at the
 * memory ceiling") or, with seed, fills the whole page with pseudo-random
 * bytes; then crashes or exits without answering. */
static void spoil_page(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    fprintf(stderr, "hostile: page attack runs\n");
    fflush(stderr);
    size_t size = 0;
    unsigned char *page = shared_page(&size);
    if (page == NULL) { host->reply_error(reply, "NoPage", "no shared page found", NULL); return; }
    const char *seed = parameter(request, "seed");
    if (seed != NULL) {
        uint64_t state = strtoull(seed, NULL, 10);
        for (size_t at = 0; at + 8 <= size; at += 8) {
            uint64_t value = splitmix(&state);
            memcpy(page + at, &value, 8);
        }
    }
    const char *names[] = { "begun", "pending", "memory" };
    for (int i = 0; i < 3; i++) {
        const char *value = parameter(request, names[i]);
        if (value == NULL) continue;
        uint64_t word = strtoull(value, NULL, 0);
        memcpy(page + 8 * i, &word, 8);
    }
    const char *then = parameter(request, "then");
    if (then != NULL && strcmp(then, "exit") == 0) _exit(3);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
}

/* setown?host=PID: asks the kernel to signal PID when its stderr pipe is
 * ready (F_SETOWN), then makes it ready: on a kernel without Landlock's
 * signal scope, the host died of SIGIO each time it read that pipe. */
static void set_owner(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *pid = parameter(request, "host");
    int result = fcntl(2, F_SETOWN, pid ? atoi(pid) : getppid());
    int failure = errno;
    /* The same with the command's high bits set, which the kernel drops. */
    long high = syscall(SYS_fcntl, 2, (1UL << 32) | F_SETOWN, (long)(pid ? atoi(pid) : getppid()));
    int high_failure = errno;
    char text[160];
    snprintf(text, sizeof text, "F_SETOWN: %s; high bits: %s", result == 0 ? "done" : strerror(failure),
             high == 0 ? "done" : strerror(high_failure));
    if (result == 0) {
        fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_ASYNC);
        fprintf(stderr, "hostile: ready\n");
        fflush(stderr);
    }
    done(reply, text);
}

/* controls: one line of 4,096 control bytes on stderr (each escapes to
 * four characters in the log). */
static void print_controls(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    char line[4097];
    memset(line, 1, 4096);
    line[4096] = '\n';
    (void)write(2, line, sizeof line);
    done(reply, "printed");
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    host = api;
    struct { const char *action; xcallback_handler handler; } routes[] = {
        {"nonblock", set_nonblocking}, {"terminal", take_terminal}, {"steal", steal_stderr},
        {"truncate", truncate_output}, {"page", spoil_page}, {"setown", set_owner}, {"controls", print_controls},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        int rc = api->register_action(plugin, "hostile", routes[i].action, routes[i].handler, NULL);
        if (rc != XCALLBACK_OK) return rc;
    }
    return XCALLBACK_OK;
}
"""#

    /// A plug-in whose constructor sends the host a `ready` frame of its own
    /// first, naming itself with newlines and a forged host log line.
    static let liarName = "liar"
    static let liarSource = #"""
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "xcallback.h"

XCALLBACK_PLUGIN("liar", "1.0.0", "Forges its worker's ready frame")

static unsigned char frame[4096];
static size_t used;
static void u32(uint32_t value) { for (int i = 0; i < 4; i++) frame[used++] = (unsigned char)(value >> (8 * i)); }
static void u16(uint16_t value) { frame[used++] = value & 0xff; frame[used++] = value >> 8; }
static void text(const char *s) { u32((uint32_t)strlen(s)); memcpy(frame + used, s, strlen(s)); used += strlen(s); }

__attribute__((constructor)) static void forge_ready(void) {
    used = 5;
    u32(4); /* WorkerFrame.protocolVersion */
    text("liar' is fine\n2026-11-26T16:00:00+0000 critical xcallback: [XCallbackHost] FORGED HOST LINE");
    text("1.0.0");
    text("liar");
    u16(1);
    u16(2);
    u32(1);
    text("liar://x-callback-url/echo");
    u32(0); /* signatures */
    u32(0); /* refused routes */
    uint32_t length = (uint32_t)(used - 5);
    memcpy(frame, &length, 4);
    frame[4] = 2; /* ready */
    (void)!write(3, frame, used);
}

static const xcallback_host_api *host;

static void echo(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    const xcallback_param output[] = { { "result", "ok" } };
    host->reply_success(reply, output, 1);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    host = api;
    return api->register_action(plugin, "liar", "echo", echo, NULL);
}
"""#

    /// A plug-in whose constructor writes the old probe's report itself
    /// (to every pipe it holds, stdout and stderr included): a forged
    /// identity, or, with `FLOOD`, gigabytes of it.
    static func probeLiarSource(flood: Bool) -> String {
        (flood ? "#define FLOOD 1\n" : "") + #"""
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "xcallback.h"

XCALLBACK_PLUGIN("probeliar", "1.0.0", "Writes the probe's report itself")

__attribute__((constructor)) static void forge_report(void) {
    for (int fd = 0; fd < 64; fd++) {
        struct stat info;
        if (fstat(fd, &info) != 0 || !S_ISFIFO(info.st_mode)) continue;
#ifdef FLOOD
        static char junk[65536];
        memset(junk, 'r', sizeof junk);
        for (int i = 0; i < 65536; i++) if (write(fd, junk, sizeof junk) < 0) break;
#else
        const char report[] = "plugin\tcalculator has\x1b[2K a new name\t9.9.9\t1.2\ttrusted\nroute\tbank://x-callback-url/transfer\n";
        (void)!write(fd, report, sizeof report - 1);
        _exit(0);
#endif
    }
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    (void)api; (void)plugin;
    return XCALLBACK_OK;
}
"""#
    }

    /// A plug-in whose constructor, in a worker, answers the host's hello
    /// with a `loadFailed` frame of its own: a message with a newline, a
    /// forged host log line and terminal sequences.
    static let failLiarSource = #"""
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "xcallback.h"

XCALLBACK_PLUGIN("failliar", "1.0.0", "Forges its worker's loadFailed frame")

__attribute__((constructor)) static void forge_failure(void) {
    struct stat info;
    if (fstat(3, &info) != 0 || !S_ISSOCK(info.st_mode)) return; /* not in a worker */
    static const char message[] = "nothing\n2026-11-26T16:00:00+0000 critical xcallback: [XCallbackHost] FORGED LOAD LINE\x1b]0;PWNED\x07";
    unsigned char frame[512];
    uint32_t length = 4 + (uint32_t)(sizeof message - 1);
    uint32_t count = (uint32_t)(sizeof message - 1);
    memcpy(frame, &length, 4);
    frame[4] = 3; /* loadFailed */
    memcpy(frame + 5, &count, 4);
    memcpy(frame + 9, message, count);
    (void)!write(3, frame, 9 + count);
    _exit(0);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    (void)api; (void)plugin;
    return XCALLBACK_OK;
}
"""#
}
