#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "host_support.h"

int xcallback_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0UL, 0UL, 0UL);
}

static void xcallback_ignore_signal(int signal) {
    (void)signal;
}

int xcallback_defer_stop_signals_to_host(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = xcallback_ignore_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGINT, &action, NULL) != 0) return -1;
    return sigaction(SIGTERM, &action, NULL);
}

int xcallback_peer_uid(int socket, unsigned int *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = (unsigned int)credentials.uid;
    return 0;
}

int xcallback_peer_pid(int socket) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    return (int)credentials.pid;
}

int xcallback_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int xcallback_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int xcallback_pidfd_open(int pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

int xcallback_accept_cloexec(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC);
}

int xcallback_shared_page_create(const char *name, long size) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (ftruncate(fd, size) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* --- The worker zygote ---------------------------------------------------- */

#include <errno.h>

int xcallback_send_with_descriptors(int socket, const void *bytes, unsigned long length,
                                    const int *descriptors, int count) {
    if (count < 0 || count > 8) {
        errno = EINVAL;
        return -1;
    }
    struct iovec vector = { (void *)bytes, length };
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } control;
    if (count > 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.bytes;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    ssize_t sent;
    do {
        sent = sendmsg(socket, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) return -1;
    if ((unsigned long)sent != length) {
        errno = EMSGSIZE;
        return -1;
    }
    return 0;
}

long xcallback_receive_with_descriptors(int socket, void *bytes, unsigned long capacity,
                                        int *descriptors, int capacity_descriptors, int *count) {
    struct iovec vector = { bytes, capacity };
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    ssize_t received;
    do {
        received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    } while (received < 0 && errno == EINTR);
    if (received < 0) return -1;
    *count = 0;
    int truncated = (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL;
         header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *received_descriptors = (int *)CMSG_DATA(header);
        for (int i = 0; i < n; i++) {
            if (!truncated && *count < capacity_descriptors) {
                descriptors[(*count)++] = received_descriptors[i];
            } else {
                close(received_descriptors[i]);
                truncated = 1;
            }
        }
    }
    if (truncated) {
        for (int i = 0; i < *count; i++) close(descriptors[i]);
        *count = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return (long)received;
}

static int is_placed(int descriptor, const int *numbers, int count) {
    for (int i = 0; i < count; i++) {
        if (numbers[i] == descriptor) return 1;
    }
    return 0;
}

int xcallback_place_descriptors(const int *descriptors, const int *numbers, int count, const int *kept,
                                int kept_count) {
    /* Copies above every number first, so placing one descriptor never
       overwrites another still to be placed. */
    int copies[8];
    int highest = 2;
    if (count < 0 || count > 8 || kept_count < 0 || kept_count > 8) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < count; i++) {
        if (numbers[i] > highest) highest = numbers[i];
    }
    for (int i = 0; i < kept_count; i++) {
        if (kept[i] > highest) highest = kept[i];
    }
    for (int i = 0; i < count; i++) {
        copies[i] = fcntl(descriptors[i], F_DUPFD_CLOEXEC, highest + 1);
        if (copies[i] < 0) return -1;
    }
    for (int i = 0; i < count; i++) {
        if (dup2(copies[i], numbers[i]) < 0) return -1; /* dup2 clears close-on-exec */
    }
    for (int descriptor = 3; descriptor <= highest; descriptor++) {
        if (!is_placed(descriptor, numbers, count) && !is_placed(descriptor, kept, kept_count)) close(descriptor);
    }
    /* Everything above: the copies, and whatever else was open. close_range
       exists since Linux 5.9; before it, every number up to the limit. */
    if (syscall(SYS_close_range, (unsigned int)highest + 1, ~0U, 0) != 0) {
        long limit = sysconf(_SC_OPEN_MAX);
        for (long descriptor = highest + 1; descriptor < (limit > 0 ? limit : 65536); descriptor++) close((int)descriptor);
    }
    return 0;
}

int xcallback_zygote_fork(int setup, int number, const int *kept, int kept_count) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    /* The child: nothing of the zygote's but `setup` and `kept`. */
    if (xcallback_place_descriptors(&setup, &number, 1, kept, kept_count) != 0) _exit(127);
    /* A session of its own, so no controlling terminal (and a group of
     * its own, which the host and the zygote signal). */
    if (setsid() < 0) _exit(127);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    for (int signal = 1; signal < NSIG; signal++) {
        if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &action, NULL);
    }
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
    return 0;
}

#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1UL << 2)
#endif

int xcallback_pidfd_signal(int pidfd, int signal, int group) {
#ifdef SYS_pidfd_send_signal
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, group ? PIDFD_SIGNAL_PROCESS_GROUP : 0UL);
#else
    (void)pidfd; (void)signal; (void)group;
    errno = ENOSYS;
    return -1;
#endif
}

int xcallback_pidfd_group_signals_supported(void) {
    int self = xcallback_pidfd_open(getpid());
    if (self < 0) return 0;
    /* Signal 0 checks without sending. This process need not lead a group:
       ESRCH (no such group) still means the kernel knows the flag. */
    int result = xcallback_pidfd_signal(self, 0, 1);
    int supported = result == 0 || errno == ESRCH;
    close(self);
    return supported;
}

int xcallback_thread_count(void) {
    FILE *stat = fopen("/proc/self/stat", "re");
    if (stat == NULL) return -1;
    char line[1024];
    size_t length = fread(line, 1, sizeof line - 1, stat);
    fclose(stat);
    line[length] = 0;
    /* Field 20, counted after the ')' that ends the command name. */
    char *cursor = strrchr(line, ')');
    if (cursor == NULL) return -1;
    int field = 2;
    while (*cursor && field < 20) {
        if (*cursor == ' ') field++;
        cursor++;
    }
    return field == 20 ? atoi(cursor) : -1;
}

/* The original argv area, measured at the first call: a later call (in a
   forked child) must not measure the shortened line the first one left. */
static char *title_start;
static size_t title_room;

int xcallback_set_command_line(char **argv, int argc, const char *const *arguments, int count) {
    if (title_start == NULL) {
        if (argc < 1 || argv == NULL || argv[0] == NULL) return -1;
        title_start = argv[0];
        title_room = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0]);
    }
    char *start = title_start;
    size_t room = title_room;
    size_t used = 0;
    for (int i = 0; i < count; i++) {
        size_t length = strlen(arguments[i]) + 1;
        if (used + length > room - 1) length = room - 1 - used; /* cut: the last byte stays NUL */
        memmove(start + used, arguments[i], length);
        used += length;
        if (used >= room - 1) break;
    }
    memset(start + used, 0, room - used);
    return 0;
}

#include <malloc.h>

void xcallback_keep_freed_memory(void) {
    /* 32 MiB may stay free in an arena before it is given back, and an arena
       grows 4 MiB past what it needs at once. */
    mallopt(M_TRIM_THRESHOLD, 32 << 20);
    mallopt(M_TOP_PAD, 4 << 20);
    /* Setting those turns off the adaptive mmap threshold: a 1 MiB input
       buffer or a long line must not be an mmap and munmap each time. */
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
}

/* --- The signal thread -------------------------------------------------- */

#include <sys/signalfd.h>

int xcallback_signal_descriptor(const sigset_t *signals) {
    return signalfd(-1, signals, SFD_CLOEXEC);
}

int xcallback_read_signal(int descriptor) {
    struct signalfd_siginfo info;
    for (;;) {
        ssize_t got = read(descriptor, &info, sizeof info);
        if (got == (ssize_t)sizeof info) return (int)info.ssi_signo;
        if (got < 0 && errno == EINTR) continue;
        return -1;
    }
}

/* --- A crashing host ------------------------------------------------------ */

#include <stdatomic.h>
#include <time.h>

__thread const char *xcallback_running_plugin __attribute__((tls_model("initial-exec"))) = NULL;

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT, SIGQUIT };
#define CRASH_SIGNAL_COUNT (int)(sizeof crash_signals / sizeof crash_signals[0])

/* What each signal did before: the Swift runtime's backtracer, unless the
   user turned it off. Called after the line only with `chain`. */
static struct sigaction crash_previous[CRASH_SIGNAL_COUNT];
static int crash_chain;
static int crash_json;
static atomic_int crash_taken;

static const char *crash_signal_name(int signal) {
    switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGQUIT: return "SIGQUIT";
    default: return "a signal";
    }
}

/* The line is built in a fixed buffer: no allocation, no stdio, nothing a
   signal handler may not call. */
struct crash_line {
    char bytes[512];
    size_t length;
};

static void crash_append(struct crash_line *line, const char *text) {
    while (*text != 0 && line->length < sizeof line->bytes - 2) line->bytes[line->length++] = *text++;
}

static void crash_append_number(struct crash_line *line, unsigned long value, int width) {
    char digits[24];
    int count = 0;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0 && count < (int)sizeof digits);
    while (count < width && count < (int)sizeof digits) digits[count++] = '0';
    while (count > 0 && line->length < sizeof line->bytes - 2) line->bytes[line->length++] = digits[--count];
}

/* RFC 3339 UTC with milliseconds, as UTCTimestamp writes it (gmtime_r is
   not async-signal-safe: the civil date is computed here). */
static void crash_append_time(struct crash_line *line) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long seconds = (long long)now.tv_sec;
    long long days = seconds / 86400;
    long long rest = seconds % 86400;
    /* Days since 1970-01-01 to year, month, day (Howard Hinnant's algorithm). */
    long long shifted = days + 719468;
    long long era = (shifted >= 0 ? shifted : shifted - 146096) / 146097;
    long long day_of_era = shifted - era * 146097;
    long long year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    long long day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    long long month_index = (5 * day_of_year + 2) / 153;
    long long day = day_of_year - (153 * month_index + 2) / 5 + 1;
    long long month = month_index < 10 ? month_index + 3 : month_index - 9;
    long long year = year_of_era + era * 400 + (month <= 2);
    crash_append_number(line, (unsigned long)year, 4);
    crash_append(line, "-");
    crash_append_number(line, (unsigned long)month, 2);
    crash_append(line, "-");
    crash_append_number(line, (unsigned long)day, 2);
    crash_append(line, "T");
    crash_append_number(line, (unsigned long)(rest / 3600), 2);
    crash_append(line, ":");
    crash_append_number(line, (unsigned long)(rest / 60 % 60), 2);
    crash_append(line, ":");
    crash_append_number(line, (unsigned long)(rest % 60), 2);
    crash_append(line, ".");
    crash_append_number(line, (unsigned long)(now.tv_nsec / 1000000), 3);
    crash_append(line, "Z");
}

/* One line: what happened, and what to do about it. Plug-in names are
   1-64 characters of A-Z a-z 0-9 . _ - (PluginLoader): nothing to escape. */
static void crash_build_line(struct crash_line *line, int signal, const siginfo_t *info) {
    const char *name = crash_signal_name(signal);
    /* Sent by another process (kill, or a terminal's Ctrl-\ for SIGQUIT),
       not raised by something this process did. */
    int sent = info != NULL && info->si_code <= 0 && info->si_pid != getpid();
    const char *plugin = sent || signal == SIGQUIT ? NULL : xcallback_running_plugin;
    if (crash_json) {
        crash_append(line, "{\"time\":\"");
        crash_append_time(line);
        crash_append(line, "\",\"level\":\"critical\",\"label\":\"xcallback\",\"message\":\"");
    } else {
        crash_append(line, "xcallback: ");
    }
    if (sent) {
        crash_append(line, "the host was killed by ");
        crash_append(line, name);
        crash_append(line, " from process ");
        crash_append_number(line, (unsigned long)info->si_pid, 1);
    } else if (signal == SIGQUIT) {
        crash_append(line, "the host quit on SIGQUIT");
    } else {
        crash_append(line, "the host crashed (");
        crash_append(line, name);
        crash_append(line, ")");
        if (plugin != NULL) {
            crash_append(line, " while in-process plug-in '");
            crash_append(line, plugin);
            crash_append(line, "' handled a request; run it with --isolation process to contain it");
        } else if (!crash_chain) {
            crash_append(line, "; SWIFT_BACKTRACE=enable=yes prints a backtrace");
        }
    }
    if (crash_json) crash_append(line, "\",\"metadata\":{}}");
    line->bytes[line->length++] = '\n';
}

static void crash_write(const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t written = write(STDERR_FILENO, bytes, length);
        if (written < 0) {
            if (errno == EINTR) continue;
            return;
        }
        bytes += written;
        length -= (size_t)written;
    }
}

static void crash_die(int signal) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, NULL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    pthread_sigmask(SIG_UNBLOCK, &only, NULL);
    raise(signal);
    /* Every one of these signals terminates by default; not reached. */
    _exit(128 + signal);
}

static void crash_handler(int signal, siginfo_t *info, void *context) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&crash_taken, &expected, 1)) {
        /* Another thread crashed first and is writing the line (or running
           the backtracer): let it finish, then die if it has not. */
        struct timespec pause_for = { 0, 100 * 1000 * 1000 };
        for (int i = 0; i < 50; i++) nanosleep(&pause_for, NULL);
        crash_die(signal);
    }
    int saved = errno;
    struct crash_line line;
    line.length = 0;
    crash_build_line(&line, signal, info);
    crash_write(line.bytes, line.length);
    if (crash_chain) {
        for (int i = 0; i < CRASH_SIGNAL_COUNT; i++) {
            if (crash_signals[i] != signal) continue;
            struct sigaction *previous = &crash_previous[i];
            if (previous->sa_flags & SA_SIGINFO) {
                errno = saved;
                previous->sa_sigaction(signal, info, context);
            } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
                errno = saved;
                previous->sa_handler(signal);
            }
        }
    }
    crash_die(signal);
}

int xcallback_install_crash_report(int chain, int json) {
    crash_chain = chain;
    crash_json = json;
    for (int i = 0; i < CRASH_SIGNAL_COUNT; i++) {
        if (sigaction(crash_signals[i], NULL, &crash_previous[i]) != 0) return -1;
    }
    for (int i = 0; i < CRASH_SIGNAL_COUNT; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = crash_handler;
        /* On the alternate stack where there is one (the main thread's,
           from the Swift runtime), so a stack overflow there is reported
           too. The other crash signals stay deliverable inside the handler,
           as the runtime's own handler has them, so a second crash while
           it runs is not a silent hang; everything else waits. */
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigfillset(&action.sa_mask);
        for (int j = 0; j < CRASH_SIGNAL_COUNT; j++) sigdelset(&action.sa_mask, crash_signals[j]);
        if (sigaction(crash_signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}
