#ifndef XCALLBACK_HOST_SUPPORT_H
#define XCALLBACK_HOST_SUPPORT_H

/* System calls Swift cannot reach directly (prctl is variadic). Internal to
 * the host; not part of the plug-in ABI. */

/* Asks the kernel to send `signal` to this process when its parent dies,
 * so a worker never outlives its host, even one killed with SIGKILL.
 * Returns 0, or -1 with errno set. */
int xcallback_set_parent_death_signal(int signal);

/* A file descriptor that becomes readable when process `pid` exits
 * (pidfd_open, Linux 5.3+), so exits are waited for with poll, not sleeps.
 * Returns -1 with errno set where unsupported. */
int xcallback_pidfd_open(int pid);

/* accept4(listener, NULL, NULL, SOCK_CLOEXEC): the connection is
 * close-on-exec from the start, so a worker or --open command spawned by
 * another thread at that moment never inherits it (and never holds a
 * client's connection open). Returns the descriptor, or -1 with errno set. */
int xcallback_accept_cloexec(int listener);

#endif
