#ifndef XCALLBACK_SANDBOX_H
#define XCALLBACK_SANDBOX_H

/* The kernel calls a worker's sandbox is made of: Landlock, seccomp (through
 * libseccomp), no-new-privs, capabilities, rlimits, and the SIGSYS and
 * fatal-signal handlers that report violations to the host. Internal to
 * xcallback; not part of the plug-in ABI. Every function returns 0 (or the
 * value described) on success and -1 with errno set on failure. */

#include <stdint.h>

/* The Landlock ABI version this kernel offers, or -1 (errno ENOSYS or
 * EOPNOTSUPP when Landlock is not built in or not enabled). */
int xcallback_landlock_abi(void);

/* A Landlock ruleset handling these file-system and network rights and
 * these scopes. Returns its descriptor (close-on-exec). */
int xcallback_landlock_create(uint64_t handled_fs, uint64_t handled_net, uint64_t scoped);

/* Allows `access` beneath `path` (a directory) or on it (a file). A path
 * that does not exist is skipped: returns 1. */
int xcallback_landlock_allow(int ruleset, const char *path, uint64_t access);

/* Enforces the ruleset on the calling thread and every thread and process
 * it starts afterwards, then closes it. Needs no-new-privs. */
int xcallback_landlock_enforce(int ruleset);

/* Whether the kernel has seccomp filters (and libseccomp can use them). */
int xcallback_seccomp_available(void);

/* What the seccomp filter allows beyond the base policy. */
typedef struct {
    int network;      /* socket() of any family; connect; sendto to an address; datagram socketpair */
    int exec;         /* execve, execveat */
    int processes;    /* fork, vfork, clone without CLONE_THREAD */
    int ipc;          /* System V shared memory, message queues, semaphores (and POSIX message queues, where Landlock does not refuse them) */
    int own_pid;      /* the worker: signals to any other pid are violations unless processes */
    int host_pid;     /* the host: signalling or reprioritizing it is a violation (as for the parent) */
    int file_view;    /* the worker runs in a file view of its own (xcallback_build_view) */
} xcallback_seccomp_grant;

/* The allow-list (allow_list.c): named groups of system calls, and what a
 * group needs before a worker gets it. */
enum {
    XCALLBACK_GROUP_ALWAYS = 0,
    XCALLBACK_GROUP_FILE_VIEW = 1,
    XCALLBACK_GROUP_NETWORK = 2,
    XCALLBACK_GROUP_EXEC = 3,
    XCALLBACK_GROUP_PROCESSES = 4,
    XCALLBACK_GROUP_IPC = 5,
};
int xcallback_seccomp_group_count(void);
/* The group's name ("@default"), NULL past the last. */
const char *xcallback_seccomp_group_name(int index);
/* What the group is for, in a few words. */
const char *xcallback_seccomp_group_purpose(int index);
/* XCALLBACK_GROUP_*: what the group needs. */
int xcallback_seccomp_group_needs(int index);
/* The group's `call`th system call name, NULL past the last. */
const char *xcallback_seccomp_group_call(int index, int call);
/* The calls that end a worker (the allow-list's @violations group, which
 * the argument filter makes fatal): NULL-terminated. */
const char *const *xcallback_violation_calls(void);
/* Whether a worker with `grant` gets group `index`. */
int xcallback_seccomp_group_granted(int index, const xcallback_seccomp_grant *grant);

/* Loads the allow-list filter on every thread (TSYNC): the groups' calls
 * pass (ioctl and prctl only with the listed requests and options), the
 * file-metadata group only with a file view (else EPERM), and any other
 * call fails with ENOSYS. The grant's calls and the violations pass here
 * for xcallback_seccomp_load's filter to decide. Returns 0 or -errno. */
int xcallback_allow_list_load(const xcallback_seccomp_grant *grant);

/* Compiles the allow-list for `grant` now and keeps it, so that a process
 * forked afterwards loads it without building it again. Call only while
 * single-threaded (the zygote's warm-up). Returns 0 or -errno. */
int xcallback_allow_list_prepare(const xcallback_seccomp_grant *grant);

/* One path of a worker's file view. */
enum {
    XCALLBACK_VIEW_READ = 0,      /* bound read-only */
    XCALLBACK_VIEW_WRITE = 1,     /* bound read-write */
    XCALLBACK_VIEW_DEVICE = 2,    /* a device node, bound read-write */
    XCALLBACK_VIEW_FOLLOW = 1 << 4, /* bind what a symlink names at the symlink's own path (/proc/self) */
    XCALLBACK_VIEW_GRANTED = 1 << 5, /* a granted path: refused, not followed, if a symlink is on it */
};
typedef struct {
    const char *path;
    int kind;
} xcallback_view_entry;

/* Replaces the calling process's file system with a view of its own: an
 * empty, read-only tmpfs root with `entries` bound in at their own paths
 * (missing ones skipped; a symlink made again as a symlink unless FOLLOW;
 * a granted one with a symlink on its path refused), and a tmpfs of
 * `scratch_bytes` at `scratch` owned by `owner`:`group`, mode 0700, no
 * exec (`scratch_exec` is ignored: programs come from the system's folders). Needs a mount namespace of its
 * own (xcallback_enter_namespaces with `mount`) and must run before any
 * thread starts. Returns 0, or -1 with errno and `failure` naming the step. */
int xcallback_build_view(const xcallback_view_entry *entries, int count, const char *scratch, uint64_t scratch_bytes,
                         int scratch_exec, uint32_t owner, uint32_t group, char *failure, unsigned long failure_size);

/* The common part of every worker's view, built once (view_template.c):
 * `entries` bound into a read-only tmpfs root in a mount namespace of its
 * own, which this process keeps. A worker forked afterwards builds its view
 * from it (xcallback_build_view does, when it can) instead of whole. Root
 * only (else -1, EPERM: each worker builds its whole view); call while
 * single-threaded. */
int xcallback_view_template_make(const xcallback_view_entry *entries, int count, char *failure,
                                 unsigned long failure_size);

/* Whether this process holds a template. */
int xcallback_view_template_ready(void);

/* Whether xcallback_build_view would build a view of `entries` from the
 * template (and so needs no mount namespace entered first). */
int xcallback_view_template_usable(const xcallback_view_entry *entries, int count);

/* The template's descriptors (up to `capacity`), which a fork that closes
 * every other descriptor must keep. Returns how many. */
int xcallback_view_template_descriptors(int *descriptors, int capacity);

/* Forgets the template and closes its descriptors: a worker does before
 * any plug-in code runs (building its view from it does too). */
void xcallback_view_template_release(void);

/* Becomes `uid`:`gid` with no supplementary groups, after emptying the
 * capability bounding and ambient sets (a root host's worker: it keeps no
 * capability in the initial user namespace), and asks again for SIGKILL
 * at its parent's death, which a change of identity clears. */
int xcallback_become(uint32_t uid, uint32_t gid);

/* Loads the worker's seccomp filter on every thread (TSYNC). Calls that are
 * merely not granted (socket, connect, exec, fork, setsid, System V IPC)
 * fail with an errno;
 * dangerous calls (ptrace, process_vm_*, mount, bpf, kill outside the
 * worker, ...) end the worker. With `supervisor` (a Unix socket to the
 * host; -1: none) both kinds wait in the kernel for the host to answer: the
 * filter's listener is sent there (SCM_RIGHTS) and closed here. Returns 0
 * or -errno. */
int xcallback_seccomp_load(const xcallback_seccomp_grant *grant, int supervisor);

/* Where the fatal-signal handler reports: `memory` gets 1 when the process
 * dies of a fatal signal with its data segment within an eighth of
 * `memory_ceiling` bytes (0: no ceiling). Installs the handler, with an
 * alternate signal stack. */
int xcallback_sandbox_report_to(uint64_t *memory, uint64_t memory_ceiling);

enum {
    XCALLBACK_DENIED_SOCKET = 1 << 0,
    XCALLBACK_DENIED_EXEC = 1 << 1,
    XCALLBACK_DENIED_FORK = 1 << 2,
    XCALLBACK_DENIED_SESSION = 1 << 3,
    XCALLBACK_DENIED_ADDRESS = 1 << 4,
    XCALLBACK_DENIED_IPC = 1 << 5,
};

/* Namespaces a worker may be given (xcallback_enter_namespaces). */
enum {
    XCALLBACK_NAMESPACE_USER = 1 << 0,
    XCALLBACK_NAMESPACE_IPC = 1 << 1,
    XCALLBACK_NAMESPACE_NETWORK = 1 << 2,
    XCALLBACK_NAMESPACE_MOUNT = 1 << 3,
};

/* Moves the calling process into a new IPC namespace (`ipc`) and a new,
 * empty network namespace (`network`): directly where it may (root), else
 * inside a new user namespace that maps only its own uid and gid (so it
 * keeps them, and every file it could open before) with setgroups denied.
 * Must run single-threaded, before the seccomp filter (which makes unshare
 * fatal) and before capabilities are dropped. Returns the
 * XCALLBACK_NAMESPACE_* entered (0 when none was asked for), or -1 with
 * errno (EPERM, ENOSPC, EINVAL: the kernel lends none here; nothing was
 * changed, unless errno is EIO: a user namespace was entered but its
 * mapping could not be written). */
int xcallback_enter_namespaces(int ipc, int network, int mount);

/* Whether a process like this one could enter those namespaces: tries it
 * in a short-lived child (fork, unshare, _exit). Returns the
 * XCALLBACK_NAMESPACE_* the child got, or 0; MOUNT only where the child
 * could also build an empty file view (xcallback_build_view). */
int xcallback_namespaces_available(void);

/* The host's side. */

/* Receives the listener a worker sent over `channel`; -1 when it sent none. */
int xcallback_seccomp_receive_listener(int channel);

/* One call a worker's filter handed to the host. */
typedef struct {
    uint64_t id;
    int number;       /* the system call */
    int pid;          /* the process that made it (the worker, or a child of it) */
    uint64_t denied_kind; /* XCALLBACK_DENIED_*: merely not granted; 0: a violation */
    int error;        /* the errno it fails with */
} xcallback_supervised_call;

/* Waits for the next call; 0, or -1 with errno (ENOENT: its process died). */
int xcallback_seccomp_next_call(int listener, xcallback_supervised_call *call);

/* Fails `call` with its errno, letting the process go on. */
int xcallback_seccomp_answer(int listener, const xcallback_supervised_call *call);

/* Forks a guardian for a worker whose plug-in may start processes: it
 * holds no descriptor, runs no plug-in code, and when the worker dies for
 * any reason (its host killed with SIGKILL included: the worker dies of
 * PR_SET_PDEATHSIG), kills the worker's process group, where the sandbox
 * keeps everything the plug-in started. Call while single-threaded, before
 * the sandbox (the guardian stays outside it, out of the plug-in's reach:
 * Landlock's signal scope keeps the sandboxed worker from signalling it). */
int xcallback_start_group_guardian(void);

/* prctl(PR_SET_NO_NEW_PRIVS, 1). */
int xcallback_no_new_privileges(void);

/* Empties the bounding, ambient, effective, permitted and inheritable
 * capability sets of this process. */
int xcallback_drop_capabilities(void);

/* prctl(PR_SET_DUMPABLE, 0): other processes of the same user can no
 * longer ptrace this one or open its /proc/PID/fd, mem or environ. */
int xcallback_make_nondumpable(void);

/* The name of system call `number` on this architecture, or NULL. The
 * caller frees it. */
char *xcallback_syscall_name(int number);

#endif
