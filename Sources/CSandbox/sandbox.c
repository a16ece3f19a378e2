#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#ifndef CLONE_THREAD
#define CLONE_THREAD 0x00010000
#endif

/* The kernel's structures, spelled out here: Debian's headers predate the
 * network rights (ABI 4) and scopes (ABI 6) this file uses. */
struct landlock_ruleset_attr_v6 {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
struct landlock_path_beneath_attr_packed {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));
enum { LANDLOCK_RULE_PATH_BENEATH_ = 1, LANDLOCK_CREATE_RULESET_VERSION_ = 1 };

int xcallback_landlock_abi(void) {
    return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION_);
}

int xcallback_landlock_create(uint64_t handled_fs, uint64_t handled_net, uint64_t scoped) {
    struct landlock_ruleset_attr_v6 attr = {handled_fs, handled_net, scoped};
    /* The size tells the kernel which fields this caller knows: older
     * kernels reject fields they do not have, so pass only those used. */
    size_t size = scoped ? sizeof attr : handled_net ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    return (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
}

int xcallback_landlock_allow(int ruleset, const char *path, uint64_t access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 1 : -1;
    /* A file (not a directory) may only carry the rights a file has. */
    struct landlock_path_beneath_attr_packed rule = {access, fd};
    int result = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH_, &rule, 0);
    if (result < 0 && errno == EINVAL) {
        const uint64_t file_rights = (1ULL << 0) | (1ULL << 1) | (1ULL << 2) | (1ULL << 14) | (1ULL << 15);
        rule.allowed_access = access & file_rights;
        result = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH_, &rule, 0);
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return result < 0 ? -1 : 0;
}

int xcallback_landlock_enforce(int ruleset) {
    int result = (int)syscall(SYS_landlock_restrict_self, ruleset, 0);
    int saved = errno;
    close(ruleset);
    errno = saved;
    return result < 0 ? -1 : 0;
}

int xcallback_seccomp_available(void) {
    /* seccomp_api_get() probes the kernel's filter support. */
    return prctl(PR_GET_SECCOMP) >= 0 && seccomp_api_get() >= 1;
}

/* --- Reporting: the memory-ceiling handler ------------------------------- */

/* ABI-forced state: a signal handler can reach nothing else. Set once,
 * before the filter is loaded and before any plug-in code runs. */
static uint64_t *report_memory;
static uint64_t memory_ceiling_bytes;

static void die_of(int signal_number) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigaction(signal_number, &action, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal_number);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(signal_number);
    _exit(128 + signal_number);
}

/* Reads the data-segment size (pages) from /proc/self/statm (the sandbox
 * leaves /proc/self readable); async-signal-safe. Opened only now, so a
 * worker carries no descriptor for it. */
static uint64_t data_bytes(void) {
    char text[256];
    int descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return 0;
    ssize_t count = read(descriptor, text, sizeof text - 1);
    close(descriptor);
    if (count <= 0) return 0;
    text[count] = 0;
    /* size resident shared text lib data dt: the sixth field. */
    const char *cursor = text;
    for (int field = 0; field < 5; field++) {
        while (*cursor && *cursor != ' ') cursor++;
        while (*cursor == ' ') cursor++;
    }
    uint64_t pages = 0;
    while (*cursor >= '0' && *cursor <= '9') pages = pages * 10 + (uint64_t)(*cursor++ - '0');
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void on_fatal_signal(int signal_number, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    if (report_memory && memory_ceiling_bytes) {
        uint64_t margin = memory_ceiling_bytes / 8;
        if (data_bytes() + margin >= memory_ceiling_bytes) __atomic_store_n(report_memory, 1, __ATOMIC_RELEASE);
    }
    die_of(signal_number);
}

int xcallback_sandbox_report_to(uint64_t *memory, uint64_t memory_ceiling) {
    report_memory = memory;
    memory_ceiling_bytes = memory_ceiling;

    /* A stack of its own, so a stack overflow can still be reported. */
    static char alternate[64 * 1024];
    stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
    if (sigaltstack(&stack, NULL) != 0) return -1;

    struct sigaction action;
    memset(&action, 0, sizeof action);
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    action.sa_sigaction = on_fatal_signal;
    const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGTRAP, SIGFPE};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        if (sigaction(fatal[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

/* --- The seccomp filter --------------------------------------------------- */

/* Calls refused quietly: glibc falls back from clone3 to clone (which the
 * filter can inspect), and io_uring would run socket and other calls
 * without passing through this filter at all. */
static const char *const quiet_enosys_calls[] = {
    "clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
};

/* Calls that are merely not granted: they fail with an errno the plug-in
 * can handle. Shared by the worker (which filters them) and the host's
 * supervisor (which answers them and logs each kind once). */
struct soft_denial {
    const char *name;
    int error;
    uint64_t kind;
};
static const struct soft_denial soft_denials[] = {
    {"socket", EACCES, XCALLBACK_DENIED_SOCKET},
    {"socketpair", EACCES, XCALLBACK_DENIED_SOCKET},
    {"connect", EACCES, XCALLBACK_DENIED_ADDRESS},
    {"sendto", EACCES, XCALLBACK_DENIED_ADDRESS},
    {"execve", EACCES, XCALLBACK_DENIED_EXEC},
    {"execveat", EACCES, XCALLBACK_DENIED_EXEC},
    {"fork", EAGAIN, XCALLBACK_DENIED_FORK},
    {"vfork", EAGAIN, XCALLBACK_DENIED_FORK},
    {"clone", EAGAIN, XCALLBACK_DENIED_FORK},
    {"setsid", EPERM, XCALLBACK_DENIED_SESSION},
    {"setpgid", EPERM, XCALLBACK_DENIED_SESSION},
    {"shmget", EACCES, XCALLBACK_DENIED_IPC},
    {"shmat", EACCES, XCALLBACK_DENIED_IPC},
    {"shmctl", EACCES, XCALLBACK_DENIED_IPC},
    {"shmdt", EACCES, XCALLBACK_DENIED_IPC},
    {"msgget", EACCES, XCALLBACK_DENIED_IPC},
    {"msgsnd", EACCES, XCALLBACK_DENIED_IPC},
    {"msgrcv", EACCES, XCALLBACK_DENIED_IPC},
    {"msgctl", EACCES, XCALLBACK_DENIED_IPC},
    {"semget", EACCES, XCALLBACK_DENIED_IPC},
    {"semop", EACCES, XCALLBACK_DENIED_IPC},
    {"semtimedop", EACCES, XCALLBACK_DENIED_IPC},
    {"semctl", EACCES, XCALLBACK_DENIED_IPC},
    {"ipc", EACCES, XCALLBACK_DENIED_IPC},
    {"mq_open", EACCES, XCALLBACK_DENIED_IPC},
    {"mq_unlink", EACCES, XCALLBACK_DENIED_IPC},
    {"mq_timedsend", EACCES, XCALLBACK_DENIED_IPC},
    {"mq_timedreceive", EACCES, XCALLBACK_DENIED_IPC},
    {"mq_notify", EACCES, XCALLBACK_DENIED_IPC},
    {"mq_getsetattr", EACCES, XCALLBACK_DENIED_IPC},
};

static const struct soft_denial *soft_denial_for(int number) {
    for (size_t i = 0; i < sizeof soft_denials / sizeof soft_denials[0]; i++) {
        if (seccomp_syscall_resolve_name(soft_denials[i].name) == number) return &soft_denials[i];
    }
    return NULL;
}

/* An argument the kernel reads as 32 bits (a pid, a command) equal to
 * `value`. SCMP_A*_32(SCMP_CMP_EQ) compares the whole 64-bit register, so
 * a caller who sets the high bits would slip past it while the kernel,
 * which drops them, does what the rule meant to stop. */
#define LOW32_EQ(arg, value) SCMP_CMP64((arg), SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, (uint32_t)(value))

static int rule(scmp_filter_ctx filter, uint32_t action, const char *name, unsigned count,
                struct scmp_arg_cmp first) {
    int number = seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) return 0; /* not on this architecture */
    return count ? seccomp_rule_add(filter, action, number, 1, first) : seccomp_rule_add(filter, action, number, 0);
}

static int soft(scmp_filter_ctx filter, int supervised, const char *name, unsigned count, struct scmp_arg_cmp first) {
    const struct soft_denial *denial = NULL;
    for (size_t i = 0; i < sizeof soft_denials / sizeof soft_denials[0]; i++) {
        if (strcmp(soft_denials[i].name, name) == 0) denial = &soft_denials[i];
    }
    uint32_t action = supervised ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO((uint32_t)denial->error);
    return rule(filter, action, name, count, first);
}

/* Hands the listener to the host over `channel` (SCM_RIGHTS). */
static int send_descriptor(int channel, int descriptor) {
    char byte = 'L';
    struct iovec data = {&byte, 1};
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1,
                             .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
    ssize_t sent;
    do sent = sendmsg(channel, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == 1 ? 0 : -1;
}

int xcallback_seccomp_load(const xcallback_seccomp_grant *grant, int supervisor) {
    /* With a supervisor (the host, at the other end of `supervisor`), a
     * denied or dangerous call waits in the kernel while the host answers
     * it: nothing the plug-in does to its own signals or memory can hide
     * the call from the host or change the answer. Without one (the probe
     * of `check`), the kernel answers alone. */
    int supervised = supervisor >= 0 && seccomp_api_get() >= 6;
    uint32_t fatal = supervised ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS;
    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
    if (filter == NULL) return -ENOMEM;
    int result = 0;
    const struct scmp_arg_cmp none = {0};
    /* Threads already running are filtered too. */
    result |= seccomp_attr_set(filter, SCMP_FLTATR_CTL_TSYNC, 1);
    /* Every system call the worker makes runs the filter: a binary tree
     * over the rules' call numbers instead of a list, so the calls a request
     * makes pass in a few comparisons (best effort: older libseccomp lacks it). */
    (void)seccomp_attr_set(filter, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    /* A call made through another architecture's entry (int 0x80 on
     * x86_64) would dodge every rule below. */
    result |= seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);

    /* Calls that reach past the worker (other processes, the kernel, the
     * machine): never needed to handle a request, so trying one ends the
     * worker. One list, the allow-list's @violations group; names, not
     * numbers: libseccomp resolves them per architecture and skips any this
     * one does not have. */
    for (const char *const *call = xcallback_violation_calls(); *call; call++) {
        result |= rule(filter, fatal, *call, 0, none);
    }
    for (size_t i = 0; i < sizeof quiet_enosys_calls / sizeof quiet_enosys_calls[0]; i++) {
        result |= rule(filter, SCMP_ACT_ERRNO(ENOSYS), quiet_enosys_calls[i], 0, none);
    }
    /* Typing into the host's terminal. */
    result |= rule(filter, fatal, "ioctl", 1, SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, TIOCSTI));
    result |= rule(filter, fatal, "ioctl", 1, SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, TIOCLINUX));
    /* Taking the host's terminal from it: making the worker's group the
     * foreground one (the host, in the background, stops at its next read),
     * stopping its output (TCXONC: the host blocks at its next log line),
     * flushing what it typed or wrote, making it a controlling terminal.
     * ENOTTY, what each gives on a descriptor that is not a terminal (which
     * a worker's are meant to be), rather than a violation: a library that
     * tidies up a terminal it thinks it has (tcflush, tcsetpgrp in a job
     * control shell a plug-in with `exec` runs) carries on as it would
     * without one, and none of them can harm anything once refused. The
     * number is 32 bits (the kernel's `unsigned int cmd`): the upper half
     * of the register is masked off, as a caller may leave anything there. */
    const unsigned long terminal_requests[] = {TIOCSPGRP, TCXONC, TCFLSH, TIOCSCTTY};
    for (size_t i = 0; i < sizeof terminal_requests / sizeof terminal_requests[0]; i++) {
        result |= rule(filter, SCMP_ACT_ERRNO(ENOTTY), "ioctl", 1,
                       SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, terminal_requests[i]));
    }

    /* Signals. With no processes of its own, a worker may signal only
     * itself (raise, abort and pthread_kill use tgkill on their own pid).
     * With processes, Landlock's signal scope keeps it to its own
     * descendants; the host and "everyone" (-1) stay off limits.
     *
     * The rest of the family is ruled like kill: a call that names a
     * process (tgkill's and rt_tgsigqueueinfo's thread group,
     * rt_sigqueueinfo's pid) may name only the worker itself, or with
     * processes anything but the host and the zygote (their groups and -1
     * mean nothing to these calls: the kernel refuses them). tkill names a
     * thread, not a process: the host's and the zygote's threads have ids
     * of their own, which a filter cannot tell from a child's pid, so it may
     * name only the worker's main thread, with processes or not (glibc never
     * calls it). pidfd_send_signal stays fatal: the process behind a pidfd
     * is out of the filter's sight, and on kernels before 6.12 no signal
     * scope would stop it at the host. */
    uint32_t own = (uint32_t)grant->own_pid;
    /* The host, and the process that started the worker: the same, or the
     * zygote it was forked from, which every later worker comes from. */
    uint32_t guarded[2] = {(uint32_t)grant->host_pid, (uint32_t)getppid()};
    size_t guarded_count = guarded[0] == guarded[1] ? 1 : 2;
    const char *const by_process[] = {"tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"};
    if (!grant->processes) {
        result |= rule(filter, fatal, "kill", 1, SCMP_A0_32(SCMP_CMP_NE, own));
        for (size_t i = 0; i < sizeof by_process / sizeof by_process[0]; i++) {
            result |= rule(filter, fatal, by_process[i], 1, SCMP_A0_32(SCMP_CMP_NE, own));
        }
    } else {
        for (size_t i = 0; i < guarded_count; i++) {
            /* The process, and the group it leads (the zygote leads one). */
            result |= rule(filter, fatal, "kill", 1, LOW32_EQ(0, guarded[i]));
            result |= rule(filter, fatal, "kill", 1, LOW32_EQ(0, (uint32_t)-(int32_t)guarded[i]));
            for (size_t j = 0; j < sizeof by_process / sizeof by_process[0]; j++) {
                result |= rule(filter, fatal, by_process[j], 1, LOW32_EQ(0, guarded[i]));
            }
        }
        result |= rule(filter, fatal, "kill", 1, LOW32_EQ(0, (uint32_t)-1));
    }
    result |= rule(filter, fatal, "tkill", 1, SCMP_A0_32(SCMP_CMP_NE, own));
    result |= rule(filter, fatal, "pidfd_open", 1, SCMP_A0_32(SCMP_CMP_NE, own));

    /* Asking the kernel to signal another process when a descriptor is
     * ready (F_SETOWN, F_SETOWN_EX, FIOSETOWN, SIOCSPGRP) reaches past
     * Landlock's signal scope on kernels without it: the owner gets SIGIO
     * (or the F_SETSIG signal) whenever the host reads the worker's pipe.
     * Only the worker itself may be the owner. */
    result |= seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 2,
                               LOW32_EQ(1, F_SETOWN), SCMP_A2_32(SCMP_CMP_NE, own));
    result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "fcntl", 1, LOW32_EQ(1, F_SETOWN_EX));
    result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, FIOSETOWN));
    result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, SIOCSPGRP));

    /* Set-user-ID and set-group-ID bits: a file a plug-in writes under a
     * grant stays on the host's disk, where anyone may run it as the
     * plug-in's user. Refused when a mode is set (chmod family) or a file
     * made (open with O_CREAT or O_TMPFILE, creat) with either bit. The
     * open rules compare the flags and the mode, two arguments, in one
     * rule each. */
    const uint32_t privileged_bits[] = {S_ISUID, S_ISGID};
    for (size_t i = 0; i < 2; i++) {
        const uint32_t bit = privileged_bits[i];
        result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "chmod", 1, SCMP_A1_64(SCMP_CMP_MASKED_EQ, bit, bit));
        result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "fchmod", 1, SCMP_A1_64(SCMP_CMP_MASKED_EQ, bit, bit));
        result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "fchmodat", 1, SCMP_A2_64(SCMP_CMP_MASKED_EQ, bit, bit));
        result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "fchmodat2", 1, SCMP_A2_64(SCMP_CMP_MASKED_EQ, bit, bit));
        result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "creat", 1, SCMP_A1_64(SCMP_CMP_MASKED_EQ, bit, bit));
        const uint32_t creating[] = {O_CREAT, __O_TMPFILE};
        for (size_t j = 0; j < 2; j++) {
            int open_number = seccomp_syscall_resolve_name("open");
            if (open_number != __NR_SCMP_ERROR) {
                result |= seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), open_number, 2,
                                           SCMP_A1_64(SCMP_CMP_MASKED_EQ, creating[j], creating[j]),
                                           SCMP_A2_64(SCMP_CMP_MASKED_EQ, bit, bit));
            }
            result |= seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(openat), 2,
                                       SCMP_A2_64(SCMP_CMP_MASKED_EQ, creating[j], creating[j]),
                                       SCMP_A3_64(SCMP_CMP_MASKED_EQ, bit, bit));
        }
    }
    /* A lease on a file it may read stalls every writer of the file (the
     * host's operator, another program) for the kernel's lease-break time. */
    result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "fcntl", 1, LOW32_EQ(1, F_SETLEASE));

    /* Other processes' limits and priorities: no LSM hook guards them, and
     * a same-user process may lower them (a host whose file-size limit
     * shrank to one byte dies of SIGXFSZ at its next record). glibc passes
     * 0 for "this process" (setrlimit, nice). */
    result |= rule(filter, fatal, "prlimit64", 1, SCMP_A0_32(SCMP_CMP_NE, 0));
    result |= rule(filter, fatal, "setpriority", 1, SCMP_A0_32(SCMP_CMP_NE, PRIO_PROCESS));
    result |= rule(filter, fatal, "setpriority", 1, SCMP_A1_32(SCMP_CMP_NE, 0));
    /* Scheduling and I/O priority: the host by its pid is a violation; any
     * other thread but the caller (0) is refused. The host's other threads
     * have ids of their own that a filter cannot tell from the worker's
     * (pthread_setaffinity_np passes a thread id), so a worker may change
     * only the calling thread: another worker's threads, or the host's
     * reply threads set to SCHED_IDLE, are out of its reach. */
    const char *const scheduling[] = {"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"};
    for (size_t i = 0; i < sizeof scheduling / sizeof scheduling[0]; i++) {
        for (size_t j = 0; j < guarded_count; j++) {
            result |= rule(filter, fatal, scheduling[i], 1, LOW32_EQ(0, guarded[j]));
        }
        result |= rule(filter, SCMP_ACT_ERRNO(EPERM), scheduling[i], 1, SCMP_A0_32(SCMP_CMP_NE, 0));
    }
    for (size_t j = 0; j < guarded_count; j++) {
        result |= rule(filter, fatal, "ioprio_set", 1, LOW32_EQ(1, guarded[j]));
    }
    result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "ioprio_set", 1, SCMP_A1_32(SCMP_CMP_NE, 0));
    /* 0 is "this one" only for a process: for a user it is root (every
     * process of a root host), so only IOPRIO_WHO_PROCESS (1) may pass. */
    result |= rule(filter, SCMP_ACT_ERRNO(EPERM), "ioprio_set", 1, SCMP_A0_32(SCMP_CMP_NE, 1));

    if (!grant->network) {
        result |= soft(filter, supervised, "socket", 0, none);
        /* A Unix datagram socket needs no socket(): socketpair makes one,
         * and sendto or connect then reaches any socket on a path it may
         * look up (/dev/log, journald, another program's). Stream and
         * seqpacket pairs stay (the worker's own channels are such): a
         * connected stream socket refuses an address (EISCONN) and a
         * seqpacket one ignores it, so sendmsg needs no rule. SOCK_RAW is a
         * datagram socket too, so only those two types pass: the type's low
         * four bits must be 1 (stream) or 5 (seqpacket), i.e. bit 0 set and
         * bits 1 and 3 clear. */
        const struct scmp_arg_cmp datagram[] = {
            SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0x1, 0x0),
            SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0x2, 0x2),
            SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0x8, 0x8),
        };
        for (size_t i = 0; i < sizeof datagram / sizeof datagram[0]; i++) {
            result |= soft(filter, supervised, "socketpair", 1, datagram[i]);
        }
        result |= soft(filter, supervised, "connect", 0, none);
        /* send() is sendto with no address: only an address is refused. */
        result |= soft(filter, supervised, "sendto", 1, SCMP_A4_64(SCMP_CMP_NE, 0));
    }
    if (!grant->ipc) {
        /* System V IPC objects are found by number, by anyone, and only
         * their mode guards them: another process of the same user keeps
         * its shared memory and queued messages there (0600 keeps out other
         * users, not the worker). POSIX message queues are found by name the
         * same way; Landlock refuses those too (an open on the mqueue mount,
         * outside every grant, even with `ipc`), so these rules are for
         * kernels without it. */
        const char *const ipc_calls[] = {"shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv",
                                         "msgctl", "semget", "semop", "semtimedop", "semctl", "ipc",
                                         "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
                                         "mq_getsetattr"};
        for (size_t i = 0; i < sizeof ipc_calls / sizeof ipc_calls[0]; i++) {
            result |= soft(filter, supervised, ipc_calls[i], 0, none);
        }
    }
    if (!grant->exec) {
        result |= soft(filter, supervised, "execve", 0, none);
        result |= soft(filter, supervised, "execveat", 0, none);
    }
    if (!grant->processes) {
        result |= soft(filter, supervised, "fork", 0, none);
        result |= soft(filter, supervised, "vfork", 0, none);
        result |= soft(filter, supervised, "clone", 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    }
    /* Processes a plug-in starts stay in its worker's process group, which
     * the host kills when the worker ends. */
    result |= soft(filter, supervised, "setsid", 0, none);
    result |= soft(filter, supervised, "setpgid", 0, none);

    if (result == 0) result = seccomp_load(filter);
    if (result == 0 && supervised) {
        int listener = seccomp_notify_fd(filter);
        if (listener < 0 || send_descriptor(supervisor, listener) != 0) result = -EIO;
        if (listener >= 0) close(listener);
    }
    seccomp_release(filter);
    return result < 0 ? result : 0;
}

/* --- The host's side: the supervisor -------------------------------------- */

int xcallback_seccomp_receive_listener(int channel) {
    char byte;
    struct iovec data = {&byte, 1};
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1,
                             .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
    ssize_t received;
    do received = recvmsg(channel, &message, MSG_CMSG_CLOEXEC);
    while (received < 0 && errno == EINTR);
    if (received != 1) return -1;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (header == NULL || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
        errno = EPROTO;
        return -1;
    }
    int descriptor;
    memcpy(&descriptor, CMSG_DATA(header), sizeof(int));
    return descriptor;
}

int xcallback_seccomp_next_call(int listener, xcallback_supervised_call *call) {
    struct seccomp_notif *request = NULL;
    struct seccomp_notif_resp *response = NULL;
    if (seccomp_notify_alloc(&request, &response) != 0) return -1;
    int result = seccomp_notify_receive(listener, request);
    if (result != 0) {
        seccomp_notify_free(request, response);
        errno = -result;
        return -1;
    }
    const struct soft_denial *denial = soft_denial_for(request->data.nr);
    call->number = request->data.nr;
    call->pid = (int)request->pid;
    call->denied_kind = denial ? denial->kind : 0;
    call->id = request->id;
    call->error = denial ? denial->error : EPERM;
    seccomp_notify_free(request, response);
    return 0;
}

int xcallback_seccomp_answer(int listener, const xcallback_supervised_call *call) {
    struct seccomp_notif *request = NULL;
    struct seccomp_notif_resp *response = NULL;
    if (seccomp_notify_alloc(&request, &response) != 0) return -1;
    memset(response, 0, sizeof *response);
    response->id = call->id;
    response->error = -call->error;
    int result = seccomp_notify_respond(listener, response);
    seccomp_notify_free(request, response);
    return result;
}

/* --- The group guardian --------------------------------------------------- */

int xcallback_start_group_guardian(void) {
    pid_t worker = getpid();
    sigset_t all, previous;
    sigfillset(&all);
    /* Blocked before the fork, so the guardian cannot miss its signal. */
    sigprocmask(SIG_BLOCK, &all, &previous);
    pid_t guardian = fork();
    if (guardian != 0) {
        sigprocmask(SIG_SETMASK, &previous, NULL);
        return guardian < 0 ? -1 : 0;
    }
    /* The guardian: holds no descriptor but one that tells it its worker
     * exited (nothing of the host's stays open through it). A pidfd, not
     * PR_SET_PDEATHSIG: the parent-death signal comes from the dying
     * worker, and Landlock's signal scope stops it at the guardian, which
     * is outside the worker's domain. */
    syscall(SYS_close_range, 0, ~0U, 0);
    int exited = (int)syscall(SYS_pidfd_open, worker, 0);
    if (exited >= 0) {
        struct pollfd event = {exited, POLLIN, 0};
        while (poll(&event, 1, -1) < 0 && errno == EINTR) {}
    } else if (prctl(PR_SET_PDEATHSIG, SIGHUP, 0, 0, 0) == 0 && getppid() == worker) {
        /* Kernels before 5.3 have no pidfd, and no Landlock signal scope. */
        sigset_t hangup;
        sigemptyset(&hangup);
        sigaddset(&hangup, SIGHUP);
        int received;
        while (sigwait(&hangup, &received) != 0) {}
    }
    /* The worker is gone (the host may have been killed too): end every
     * process a plug-in started, which the sandbox keeps in this group. */
    kill(-worker, SIGKILL);
    _exit(0);
}

/* --- Namespaces ----------------------------------------------------------- */

/* "ID ID 1\n" (async-signal-safe, unlike snprintf: the probe runs it in a
 * child forked from a host with threads). */
static void id_map(char *map, unsigned id) {
    char digits[16];
    size_t count = 0, length = 0;
    do digits[count++] = (char)('0' + id % 10);
    while ((id /= 10) != 0 && count < sizeof digits);
    for (int copy = 0; copy < 2; copy++) {
        for (size_t i = count; i > 0; i--) map[length++] = digits[i - 1];
        map[length++] = ' ';
    }
    map[length++] = '1';
    map[length++] = '\n';
    map[length] = 0;
}

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t length = strlen(text);
    ssize_t written = write(fd, text, length);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == (ssize_t)length ? 0 : -1;
}

int xcallback_enter_namespaces(int ipc, int network, int mount) {
    int flags = (ipc ? CLONE_NEWIPC : 0) | (network ? CLONE_NEWNET : 0) | (mount ? CLONE_NEWNS : 0);
    int entered = (ipc ? XCALLBACK_NAMESPACE_IPC : 0) | (network ? XCALLBACK_NAMESPACE_NETWORK : 0)
        | (mount ? XCALLBACK_NAMESPACE_MOUNT : 0);
    if (flags == 0) return 0;
    /* Root (CAP_SYS_ADMIN) needs no user namespace. */
    if (unshare(flags) == 0) return entered;
    if (errno != EPERM) return -1;
    uid_t uid = geteuid();
    gid_t gid = getegid();
    /* A non-dumpable process's /proc/self files belong to root, so it could
     * not write its own mappings: dumpable for these few calls, before any
     * plug-in code, as a worker the host executes is anyway until its
     * sandbox makes it non-dumpable. */
    int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    if (dumpable == 0) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    int result = unshare(CLONE_NEWUSER | flags);
    int saved = errno;
    if (result == 0) {
        char map[64];
        /* Only its own ids, each to itself: it keeps its uid, so every file
         * it could open before it still can (and no other: files of ids not
         * mapped here show as the overflow id, but access is still decided
         * by the real ones). setgroups is denied first, as the kernel wants
         * before an unprivileged gid_map: no group can be shed to pass a
         * "not this group" permission. */
        id_map(map, (unsigned)uid);
        if (write_text("/proc/self/setgroups", "deny") != 0 || write_text("/proc/self/uid_map", map) != 0) result = -1;
        id_map(map, (unsigned)gid);
        if (result == 0 && write_text("/proc/self/gid_map", map) != 0) result = -1;
        saved = result == 0 ? 0 : EIO;
        entered |= XCALLBACK_NAMESPACE_USER;
    }
    if (dumpable == 0) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    errno = saved;
    return result == 0 ? entered : -1;
}

int xcallback_namespaces_available(void) {
    /* A child, so the caller (a host with threads) stays where it is; it
     * calls nothing but async-signal-safe functions after the fork. */
    pid_t child = fork();
    if (child < 0) return 0;
    if (child == 0) {
        int entered = xcallback_enter_namespaces(1, 1, 1);
        if (entered < 0) _exit(0);
        /* A mount namespace is only worth having where a view can be built
         * in it (pivot_root fails on an initramfs root, for one). */
        if ((entered & XCALLBACK_NAMESPACE_MOUNT)
            && xcallback_build_view(NULL, 0, "/scratch", 1 << 16, 0, (uint32_t)getuid(), (uint32_t)getgid(), NULL, 0) != 0) {
            entered &= ~XCALLBACK_NAMESPACE_MOUNT;
        }
        _exit(entered);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

/* --- Privileges ----------------------------------------------------------- */

int xcallback_no_new_privileges(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int xcallback_drop_capabilities(void) {
    /* The bounding set first: dropping from it needs CAP_SETPCAP, which
     * the capset below takes away. EPERM means there was nothing to drop
     * (an unprivileged user); no-new-privs keeps exec from adding any. */
    for (int capability = 0; capability < 64; capability++) {
        if (prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0) {
            if (errno == EINVAL) break;
            if (errno != EPERM) return -1;
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &header, data);
}

int xcallback_make_nondumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

char *xcallback_syscall_name(int number) {
    return seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, number);
}
