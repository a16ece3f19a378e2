#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <spawn.h>
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

#include <ftw.h>
#include <stdio.h>

static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *walk) {
    (void)info; (void)flag; (void)walk;
    remove(path);
    return 0;
}

int xcallback_remove_tree(const char *path) {
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
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

int xcallback_place_descriptors(const int *descriptors, const int *numbers, int count) {
    /* Copies above every number first, so placing one descriptor never
       overwrites another still to be placed. */
    int copies[8];
    int highest = 2;
    if (count < 0 || count > 8) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < count; i++) {
        if (numbers[i] > highest) highest = numbers[i];
    }
    for (int i = 0; i < count; i++) {
        copies[i] = fcntl(descriptors[i], F_DUPFD_CLOEXEC, highest + 1);
        if (copies[i] < 0) return -1;
    }
    for (int i = 0; i < count; i++) {
        if (dup2(copies[i], numbers[i]) < 0) return -1; /* dup2 clears close-on-exec */
    }
    for (int descriptor = 3; descriptor <= highest; descriptor++) {
        if (!is_placed(descriptor, numbers, count)) close(descriptor);
    }
    /* Everything above: the copies, and whatever else was open. close_range
       exists since Linux 5.9; before it, every number up to the limit. */
    if (syscall(SYS_close_range, (unsigned int)highest + 1, ~0U, 0) != 0) {
        long limit = sysconf(_SC_OPEN_MAX);
        for (long descriptor = highest + 1; descriptor < (limit > 0 ? limit : 65536); descriptor++) close((int)descriptor);
    }
    return 0;
}

int xcallback_zygote_fork(int setup, int number) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    /* The child: nothing of the zygote's but `setup`. */
    if (xcallback_place_descriptors(&setup, &number, 1) != 0) _exit(127);
    setpgid(0, 0);
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
