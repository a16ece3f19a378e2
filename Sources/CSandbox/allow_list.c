#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <termios.h>

/* The allow-list: every system call a worker may make at all, as named
 * groups in the manner of systemd's @system-service. Anything not listed
 * fails with ENOSYS (what a kernel without the call says, so a libc that
 * knows a newer call falls back to an older one). This is the first of a
 * worker's two seccomp filters; the second (sandbox.c) decides the listed
 * calls by their arguments and by the grants: it ends the worker for a
 * violation, refuses an ungranted socket or fork with an errno, and tells
 * the host. The kernel runs both and takes the stricter answer.
 *
 * This table is the policy, in one place: the filter is built from it,
 * `check --json` lists the groups a worker gets from it, and
 * docs/security.md describes it. Calls libseccomp does not know on this
 * architecture are skipped. */

static const char *const group_default[] = {
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync", "mlock", "mlock2",
    "munlock", "membarrier", "futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
    "get_robust_list", "set_robust_list", "set_tid_address", "rseq", "restart_syscall", "rt_sigreturn",
    "exit", "exit_group", "sched_yield", "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid",
    "getegid", "getresuid", "getresgid", "getgroups", "getpgid", "getpgrp", "getsid", "getrlimit",
    "setrlimit", "prlimit64", "getrusage", "times", "uname", "sysinfo", "getcpu", "arch_prctl",
    "clock_gettime", "clock_getres", "clock_nanosleep", "gettimeofday", "time", "nanosleep", "pause",
    "getrandom", "capget", "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
    "sched_getscheduler", "sched_setscheduler", "sched_getattr", "sched_setattr",
    "sched_get_priority_max", "sched_get_priority_min", "getpriority", "setpriority", "ioprio_get",
    "ioprio_set", "get_mempolicy", "set_mempolicy", "mbind", "clone", "clone3", "prctl", "seccomp",
    "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", NULL,
};
static const char *const group_signal[] = {
    "rt_sigaction", "rt_sigprocmask", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "signalfd", "signalfd4", "kill", "tgkill",
    "tkill", "alarm", "setitimer", "getitimer", "timer_create", "timer_settime", "timer_gettime",
    "timer_getoverrun", "timer_delete", "timerfd_create", "timerfd_settime", "timerfd_gettime",
    "pidfd_open", NULL,
};
static const char *const group_basic_io[] = {
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
    "pwritev2", "lseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl", "ioctl", "fsync",
    "fdatasync", "flock", "fadvise64", "sendfile", "splice", "tee", "copy_file_range", "fstat",
    "fstatfs", NULL,
};
static const char *const group_io_event[] = {
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll",
    "ppoll", "select", "pselect6", "eventfd", "eventfd2", "pipe", "pipe2", NULL,
};
static const char *const group_file_read[] = {
    "open", "openat", "stat", "lstat", "newfstatat", "statx", "statfs", "access",
    "faccessat", "faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir",
    "fchdir", NULL,
};
static const char *const group_file_write[] = {
    "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2",
    "link", "linkat", "symlink", "symlinkat", "truncate", "ftruncate", "fallocate", "umask", NULL,
};
static const char *const group_file_metadata[] = {
    "chmod", "fchmod", "fchmodat", "fchmodat2", "utime", "utimes", "utimensat", "futimesat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "getxattr",
    "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr", "inotify_init", "inotify_init1",
    "inotify_add_watch", "inotify_rm_watch", NULL,
};
static const char *const group_socket_io[] = {
    "sendmsg", "recvmsg", "sendto", "recvfrom", "sendmmsg", "recvmmsg", "shutdown", "getsockopt",
    "setsockopt", "getsockname", "getpeername", "socketpair", NULL,
};
static const char *const group_network[] = {
    "socket", "connect", "bind", "listen", "accept", "accept4", NULL,
};
static const char *const group_exec[] = {"execve", "execveat", NULL};
static const char *const group_processes[] = {"fork", "vfork", "wait4", "waitid", "setsid", "setpgid", NULL};
static const char *const group_ipc[] = {
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semtimedop", "semctl", "ipc", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr", NULL,
};
/* Never needed to handle a request: the second filter ends the worker for
 * each (it reads this list, `xcallback_violation_calls`). They pass this
 * filter only so that the host hears of them as a violation rather than
 * the plug-in seeing ENOSYS. */
static const char *const group_violations[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "mount",
    "umount", "umount2", "pivot_root", "chroot", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "open_tree", "mount_setattr", "bpf", "perf_event_open", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "quotactl_fd", "settimeofday", "clock_settime", "clock_adjtime", "sethostname", "setdomainname",
    "iopl", "ioperm", "add_key", "request_key", "keyctl", "setns", "unshare", "open_by_handle_at",
    "lookup_dcookie", "vhangup", "nfsservctl", "pidfd_send_signal", NULL,
};

const char *const *xcallback_violation_calls(void) { return group_violations; }

struct call_group {
    const char *name;
    const char *purpose;
    int needs; /* XCALLBACK_GROUP_NEEDS_* */
    const char *const *calls;
};

static const struct call_group groups[] = {
    {"@default", "memory, threads, futexes, time, randomness, limits and scheduling of its own", XCALLBACK_GROUP_ALWAYS, group_default},
    {"@signal", "signals and timers (to itself; the second filter rules who may be signalled)", XCALLBACK_GROUP_ALWAYS, group_signal},
    {"@basic-io", "reading and writing descriptors it holds", XCALLBACK_GROUP_ALWAYS, group_basic_io},
    {"@io-event", "waiting on descriptors, pipes and event counters", XCALLBACK_GROUP_ALWAYS, group_io_event},
    {"@file-read", "opening, looking up and listing files in its view", XCALLBACK_GROUP_ALWAYS, group_file_read},
    {"@file-write", "making, renaming and removing files where it may write", XCALLBACK_GROUP_ALWAYS, group_file_write},
    {"@file-metadata", "modes, times, extended attributes and inotify: only inside its own file view", XCALLBACK_GROUP_FILE_VIEW, group_file_metadata},
    {"@socket-io", "sending and receiving on sockets it holds (its channel to the host)", XCALLBACK_GROUP_ALWAYS, group_socket_io},
    {"@network", "new sockets, connect, bind, listen, accept", XCALLBACK_GROUP_NETWORK, group_network},
    {"@exec", "starting programs", XCALLBACK_GROUP_EXEC, group_exec},
    {"@processes", "starting and waiting for processes", XCALLBACK_GROUP_PROCESSES, group_processes},
    {"@ipc", "System V IPC and POSIX message queues", XCALLBACK_GROUP_IPC, group_ipc},
    {"@violations", "calls that end the worker with SandboxViolation", XCALLBACK_GROUP_ALWAYS, group_violations},
};
enum { group_count = sizeof groups / sizeof groups[0] };

int xcallback_seccomp_group_count(void) { return group_count; }

const char *xcallback_seccomp_group_name(int index) {
    return index >= 0 && index < group_count ? groups[index].name : NULL;
}

const char *xcallback_seccomp_group_purpose(int index) {
    return index >= 0 && index < group_count ? groups[index].purpose : NULL;
}

int xcallback_seccomp_group_needs(int index) {
    return index >= 0 && index < group_count ? groups[index].needs : -1;
}

const char *xcallback_seccomp_group_call(int index, int call) {
    if (index < 0 || index >= group_count || call < 0) return NULL;
    const char *const *calls = groups[index].calls;
    for (int i = 0; calls[i]; i++) {
        if (i == call) return calls[i];
    }
    return NULL;
}

/* Calls whose every use is decided by its arguments here: only these
 * values pass (the low 32 bits, as the kernel reads an int), and the
 * second filter rules a few of them further. */
static const uint32_t ioctl_requests[] = {
    /* What isatty, terminal size and non-blocking set-up ask. */
    TCGETS, TIOCGWINSZ, TIOCGPGRP, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX,
    /* The second filter answers these: a violation (TIOCSTI, TIOCLINUX),
     * ENOTTY (taking a terminal), EPERM (owning a descriptor's signals). */
    TIOCSTI, TIOCLINUX, TIOCSPGRP, TCXONC, TCFLSH, TIOCSCTTY, FIOSETOWN, SIOCSPGRP,
};
static const uint32_t network_ioctl_requests[] = {
    SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFINDEX, SIOCGIFNAME, SIOCGIFADDR, SIOCGIFMTU, SIOCGIFHWADDR,
    SIOCATMARK, SIOCOUTQ, SIOCINQ,
};
static const uint32_t prctl_options[] = {
    PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_SECCOMP,
    PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS, PR_CAPBSET_READ, PR_CAP_AMBIENT,
    PR_GET_KEEPCAPS, PR_SET_TIMERSLACK, PR_GET_TIMERSLACK, PR_SET_THP_DISABLE, PR_GET_THP_DISABLE,
    PR_MCE_KILL_GET, PR_GET_TID_ADDRESS, PR_GET_CHILD_SUBREAPER, PR_SET_CHILD_SUBREAPER,
    PR_GET_SPECULATION_CTRL, 0x53564d41 /* PR_SET_VMA: glibc names its mappings */,
};

static int allow_values(scmp_filter_ctx filter, const char *call, unsigned arg, const uint32_t *values, size_t count) {
    int number = seccomp_syscall_resolve_name(call);
    if (number == __NR_SCMP_ERROR) return 0;
    int result = 0;
    for (size_t i = 0; i < count; i++) {
        result |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, number, 1,
                                   SCMP_CMP64(arg, SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, values[i]));
    }
    return result;
}

int xcallback_seccomp_group_granted(int index, const xcallback_seccomp_grant *grant) {
    switch (xcallback_seccomp_group_needs(index)) {
    case XCALLBACK_GROUP_ALWAYS: return 1;
    case XCALLBACK_GROUP_FILE_VIEW: return grant->file_view != 0;
    case XCALLBACK_GROUP_NETWORK: return grant->network != 0;
    case XCALLBACK_GROUP_EXEC: return grant->exec != 0;
    case XCALLBACK_GROUP_PROCESSES: return grant->processes != 0;
    case XCALLBACK_GROUP_IPC: return grant->ipc != 0;
    default: return 0;
    }
}

/* Builds the allow-list for `grant` (not loaded): NULL on failure, with
 * `*error` set to -errno. */
static scmp_filter_ctx build_allow_list(const xcallback_seccomp_grant *grant, int *error) {
    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
    if (filter == NULL) {
        *error = -ENOMEM;
        return NULL;
    }
    int result = 0;
    result |= seccomp_attr_set(filter, SCMP_FLTATR_CTL_TSYNC, 1);
    (void)seccomp_attr_set(filter, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    result |= seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    for (int g = 0; g < group_count; g++) {
        int needs = groups[g].needs;
        /* The grants' calls pass here whether granted or not: without the
         * grant, the second filter refuses them with an errno and tells the
         * host, which names the missing capability in its log. */
        int pass = needs != XCALLBACK_GROUP_FILE_VIEW || grant->file_view;
        for (int i = 0; groups[g].calls[i]; i++) {
            const char *call = groups[g].calls[i];
            int number = seccomp_syscall_resolve_name(call);
            if (number == __NR_SCMP_ERROR) continue; /* not on this architecture */
            if (strcmp(call, "ioctl") == 0 || strcmp(call, "prctl") == 0 || strcmp(call, "clone") == 0) continue;
            /* Without a file view of its own, a file's mode, times and
             * attributes are the host user's (or the machine's) to keep:
             * refused with EPERM, which every library handles. */
            result |= seccomp_rule_add(filter, pass ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EPERM), number, 0);
        }
    }
    result |= allow_values(filter, "ioctl", 1, ioctl_requests, sizeof ioctl_requests / sizeof ioctl_requests[0]);
    if (grant->network) {
        result |= allow_values(filter, "ioctl", 1, network_ioctl_requests,
                               sizeof network_ioctl_requests / sizeof network_ioctl_requests[0]);
    }
    result |= allow_values(filter, "prctl", 0, prctl_options, sizeof prctl_options / sizeof prctl_options[0]);
    /* clone with none of the namespace flags: a thread, or with
     * `processes` a process, never a namespace of its own (a new user
     * namespace would hand its child every capability there, and the
     * kernel's surface behind them). */
    const uint64_t namespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC
        | CLONE_NEWUTS | CLONE_NEWCGROUP | 0x00000080 /* CLONE_NEWTIME */;
    result |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, namespaces, 0));
    if (result != 0) {
        seccomp_release(filter);
        *error = result < 0 ? result : -EINVAL;
        return NULL;
    }
    return filter;
}

/* Compiled allow-lists, one for each combination of the grant's bits,
 * made before workers are forked (the zygote's warm-up) and inherited by
 * every worker forked after: libseccomp takes 2 ms to build this filter
 * (three hundred calls, by name), which was most of a worker's sandbox.
 * ABI-forced state in the sense that a forked child can be handed nothing
 * else: written only while the process is single-threaded, before any
 * fork, and read only after. */
static struct {
    struct sock_filter *code;
    unsigned short length;
} compiled[1 << 5];

static int grant_key(const xcallback_seccomp_grant *grant) {
    return (grant->network ? 1 : 0) | (grant->exec ? 2 : 0) | (grant->processes ? 4 : 0) | (grant->ipc ? 8 : 0)
        | (grant->file_view ? 16 : 0);
}

int xcallback_allow_list_prepare(const xcallback_seccomp_grant *grant) {
    int key = grant_key(grant);
    if (compiled[key].code) return 0;
    int error = 0;
    scmp_filter_ctx filter = build_allow_list(grant, &error);
    if (filter == NULL) return error;
    /* Exported through a pipe (libseccomp 2.5 writes to a descriptor): a
     * filter of a few hundred instructions fits its buffer. */
    int ends[2];
    int result = pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0 ? 0 : -errno;
    if (result == 0) {
        result = seccomp_export_bpf(filter, ends[1]);
        close(ends[1]);
        enum { most = 0xFFFF * sizeof(struct sock_filter) };
        void *code = result == 0 ? malloc(most) : NULL;
        ssize_t bytes = code ? read(ends[0], code, most) : -1;
        close(ends[0]);
        if (bytes > 0 && bytes % (ssize_t)sizeof(struct sock_filter) == 0) {
            void *fitted = realloc(code, (size_t)bytes);
            compiled[key].code = fitted ? fitted : code;
            compiled[key].length = (unsigned short)((size_t)bytes / sizeof(struct sock_filter));
        } else {
            free(code);
            result = result < 0 ? result : -EIO;
        }
    }
    seccomp_release(filter);
    return result < 0 ? result : 0;
}

int xcallback_allow_list_load(const xcallback_seccomp_grant *grant) {
    int key = grant_key(grant);
    if (compiled[key].code) {
        struct sock_fprog program = {compiled[key].length, compiled[key].code};
        /* TSYNC: every thread, or the id of one that could not be. */
        long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
        if (result == 0) return 0;
        return result < 0 ? -errno : -EAGAIN;
    }
    int error = 0;
    scmp_filter_ctx filter = build_allow_list(grant, &error);
    if (filter == NULL) return error;
    int result = seccomp_load(filter);
    seccomp_release(filter);
    return result < 0 ? result : 0;
}
