#ifndef XCALLBACK_HOST_SUPPORT_H
#define XCALLBACK_HOST_SUPPORT_H

/* System calls Swift cannot reach directly (prctl is variadic). Internal to
 * the host; not part of the plug-in ABI. */

/* Asks the kernel to send `signal` to this process when its parent dies,
 * so a worker never outlives its host, even one killed with SIGKILL.
 * Returns 0, or -1 with errno set. */
int xcallback_set_parent_death_signal(int signal);

/* Makes SIGINT and SIGTERM do nothing in this process (a handler that
 * returns, with SA_RESTART), so a worker outlives the stop signal a
 * terminal or systemd sends its whole group and is stopped by its host
 * instead. A handler, unlike SIG_IGN, is reset by exec: programs a plug-in
 * starts get the default actions. Returns 0, or -1 with errno set. */
int xcallback_defer_stop_signals_to_host(void);

/* A file descriptor that becomes readable when process `pid` exits
 * (pidfd_open, Linux 5.3+), so exits are waited for with poll, not sleeps.
 * Returns -1 with errno set where unsupported. */
int xcallback_pidfd_open(int pid);

/* accept4(listener, NULL, NULL, SOCK_CLOEXEC): the connection is
 * close-on-exec from the start, so a worker or --open command spawned by
 * another thread at that moment never inherits it (and never holds a
 * client's connection open). Returns the descriptor, or -1 with errno set. */
int xcallback_accept_cloexec(int listener);

#include <spawn.h>
#include <stdint.h>

/* The uid of the process at the other end of a connected Unix socket
 * (SO_PEERCRED, a GNU extension). Returns 0, or -1 with errno set. */
int xcallback_peer_uid(int socket, unsigned int *uid);

/* The pid of the process at the other end of a connected Unix socket
 * (SO_PEERCRED). Returns it, or -1 with errno set. */
int xcallback_peer_pid(int socket);

/* pipe2(fds, O_CLOEXEC): both ends close-on-exec from the start (a GNU
 * extension Swift's Glibc module does not show). Returns 0, or -1. */
int xcallback_pipe_cloexec(int fds[2]);

/* posix_spawn_file_actions_addclosefrom_np (glibc 2.34+): the child closes
 * every descriptor from `lowest` up. Returns 0, or an error number. */
int xcallback_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

/* An anonymous, close-on-exec memory file (memfd_create) of `size` bytes,
 * for a page the host and a worker share. Returns the descriptor, or -1. */
int xcallback_shared_page_create(const char *name, long size);

/* Release store and acquire load of a 64-bit word in a shared page: the
 * worker writes, the host reads, possibly after the worker died. */
static inline void xcallback_store_release_u64(uint64_t *word, uint64_t value) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}
static inline uint64_t xcallback_load_acquire_u64(const uint64_t *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

/* Removes the folder `name` of the folder open as `parent` (AT_FDCWD for
 * the current one) and everything beneath it (remove_tree.c). The walk is
 * descriptor-relative: each folder is opened relative to the one holding
 * it with O_NOFOLLOW and its entries unlinked relative to it, so a symbolic
 * link (one swapped in mid-walk included) is unlinked itself, never
 * followed; a mount point inside (another device or mount id) and anything
 * more than 64 folders deep are left. With `held` >= 0 (a descriptor of the
 * folder, O_PATH will do), that folder is emptied, and `name` removed only
 * while it still names it. Returns 0, or -1 with errno set: ENOTEMPTY,
 * EXDEV or ENAMETOOLONG when something was left, ESTALE when `name` no
 * longer names `held`. */
int xcallback_remove_tree_at(int parent, const char *name, int held);

/* xcallback_remove_tree_at for `path`: its folders are the caller's, only
 * its last name is looked at without following a link. */
int xcallback_remove_tree(const char *path);

/* --- Files the host made where others may write (held_paths.c) ----------- */

/* A handle on the folder at `path` (O_PATH | O_DIRECTORY | O_CLOEXEC, and
 * O_NOFOLLOW unless `follow`): it names that folder, whatever takes its
 * name later. Returns the descriptor, or -1 with errno set. */
int xcallback_hold_folder(const char *path, int follow);

/* The device and inode of `name` in `folder`, not following a link.
 * Returns its type (st_mode & S_IFMT), or -1 with errno set. */
int xcallback_identify_at(int folder, const char *name, unsigned long long *device, unsigned long long *inode);

/* chmod and unlink of `name` in `folder`, only while it is still the file
 * of that device and inode (never a link): 0, or -1 with errno set
 * (ESTALE when another file has taken the name). */
int xcallback_chmod_identified_at(int folder, const char *name, unsigned long long device,
                                  unsigned long long inode, unsigned int mode);
int xcallback_unlink_identified_at(int folder, const char *name, unsigned long long device,
                                   unsigned long long inode);

/* A handle on the folder at `path` (O_PATH | O_DIRECTORY | O_CLOEXEC, and
 * O_NOFOLLOW unless `follow`): it names that folder, whatever takes its
 * name later. Returns the descriptor, or -1 with errno set. */
int xcallback_hold_folder(const char *path, int follow);

/* --- The worker zygote (Worker/WorkerZygote.swift) ------------------------ */

/* sendmsg with `count` (at most 8) descriptors as SCM_RIGHTS. Returns 0
 * once all `length` bytes went as one message, or -1 with errno set. */
int xcallback_send_with_descriptors(int socket, const void *bytes, unsigned long length,
                                    const int *descriptors, int count);

/* recvmsg of one message and up to `capacity` descriptors (close-on-exec).
 * Returns its length (0 at end of input) and sets *count, or -1 with errno
 * set; a message or descriptor list that did not fit is EMSGSIZE, and any
 * descriptors that came with it are closed. */
long xcallback_receive_with_descriptors(int socket, void *bytes, unsigned long capacity,
                                        int *descriptors, int capacity_descriptors, int *count);

/* Puts each descriptors[i] (at most 8) on numbers[i], clearing
 * close-on-exec there, and closes every other descriptor from 3 up but the
 * `kept` (at most 8, left where they are). Returns 0, or -1 with errno set
 * (then some may be closed already). */
int xcallback_place_descriptors(const int *descriptors, const int *numbers, int count, const int *kept,
                                int kept_count);

/* fork(2) for the zygote. In the child: `setup` lands on `number` and every
 * other descriptor from 3 up but the `kept` is closed, the child leads a process group of
 * its own, its signal mask is empty and every disposition is the default.
 * Returns 0 in the child, the child's pid in the parent, -1 on failure. */
int xcallback_zygote_fork(int setup, int number, const int *kept, int kept_count);

/* pidfd_send_signal: to the process behind `pidfd`, or with `group` to the
 * process group it leads (Linux 6.9). By the process, not its number, so
 * never to a process that took a reaped one's pid. 0, or -1 with errno. */
int xcallback_pidfd_signal(int pidfd, int signal, int group);

/* Whether this kernel can signal a process group through a pidfd. */
int xcallback_pidfd_group_signals_supported(void);

/* Rewrites what /proc/PID/cmdline (and ps) shows: the memory of this
 * process's original argv (argc strings, contiguous) holds `arguments`
 * instead, cut to fit, the rest zeroed. Returns 0, or -1. */
int xcallback_set_command_line(char **argv, int argc, const char *const *arguments, int count);

/* How many threads this process runs (from /proc/self/stat), or -1. */
int xcallback_thread_count(void);

/* glibc's allocator, tuned for threads that free what others allocated:
 * see XCallbackSystem/Allocator.swift. */
void xcallback_keep_freed_memory(void);

/* --- The signal thread (xcallback/SignalWaiter.swift) -------------------- */

#include <signal.h>

/* The signals `run` takes from a signalfd (SignalWaiter.swift): SIGINT,
 * SIGTERM, SIGHUP and SIGUSR1. */
void xcallback_host_signal_set(sigset_t *set);

/* Whether the executable's .preinit_array blocked them, before any library
 * constructor ran, because the command is `run` (early_signals.c). */
int xcallback_host_signals_blocked_early(void);

/* A signalfd(2) for `signals` (close-on-exec), which must be blocked in
 * every thread. Returns the descriptor, or -1 with errno set. */
int xcallback_signal_descriptor(const sigset_t *signals);

/* Reads one signal from a descriptor of xcallback_signal_descriptor,
 * waiting for it (EINTR is retried). Returns its number, or -1. */
int xcallback_read_signal(int descriptor);

/* --- A crashing host (XCallbackSystem/CrashReport.swift) ---------------------- */

/* The in-process plug-in whose code this thread runs: its name as a
 * NUL-terminated string that lives as long as the process, or NULL. Read
 * by the crash handler on the crashing thread. */
extern __thread const char *xcallback_running_plugin
    __attribute__((tls_model("initial-exec")));

/* Marks this thread as running `plugin`'s code; returns the mark it had, to
 * hand back to xcallback_leave_plugin (calls may nest). */
static inline const char *xcallback_enter_plugin(const char *plugin) {
    const char *outer = xcallback_running_plugin;
    xcallback_running_plugin = plugin;
    return outer;
}

static inline void xcallback_leave_plugin(const char *outer) {
    xcallback_running_plugin = outer;
}

/* Installs the host's handler for the signals of a crash (SIGSEGV, SIGBUS,
 * SIGILL, SIGTRAP, SIGFPE, SIGABRT, SIGQUIT). On the first of them it
 * writes one line to stderr naming the signal (and the plug-in the thread
 * was running, if any), in JSON when `json` is set, then dies by that
 * signal at its default action. With `chain`, the handler each signal had
 * before (the Swift runtime's backtracer) runs after the line, before the
 * death. Returns 0, or -1 with errno set. */
int xcallback_install_crash_report(int chain, int json);

#endif
