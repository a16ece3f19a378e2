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

/* Removes `path` and everything beneath it, depth first, never following a
 * symbolic link (nftw with FTW_PHYS). Returns 0, or -1 with errno set. */
int xcallback_remove_tree(const char *path);

#endif
