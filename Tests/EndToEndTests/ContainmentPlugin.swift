/// A plug-in that tries what the third attack pass found through the old
/// deny-list (issue 41): file metadata and lookups outside every grant, and
/// system calls no plug-in needs. Every route answers with what happened.
enum ContainmentPlugin {
    static let name = "container"

    static let source = #"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("container", "1.0.0", "Tries to reach past its file view")

static const xcallback_host_api *host;

static const char *parameter(const xcallback_request *request, const char *name) {
    size_t length = 0;
    const char *value = host->request_parameter(request, name, &length);
    return value ? value : "";
}

/* success?result=done, or error Denied with the call and its errno. */
static void answer(xcallback_reply reply, const char *what, long result) {
    if (result >= 0) {
        const xcallback_param output[] = { { "result", "done" } };
        host->reply_success(reply, output, 1);
        return;
    }
    char message[256];
    snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
    host->reply_error(reply, "Denied", message, NULL);
}

static void do_chmod(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    answer(reply, "chmod", chmod(parameter(request, "path"), 0777));
}

static void do_utime(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    struct timespec times[2] = { { 1, 0 }, { 1, 0 } };
    answer(reply, "utimensat", utimensat(AT_FDCWD, parameter(request, "path"), times, 0));
}

static void do_setxattr(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    answer(reply, "setxattr", setxattr(parameter(request, "path"), "user.planted", "x", 1, 0));
}

static void do_stat(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    struct stat info;
    answer(reply, "stat", stat(parameter(request, "path"), &info));
}

static void do_inotify(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    int queue = inotify_init1(IN_CLOEXEC);
    if (queue < 0) { answer(reply, "inotify_init1", -1); return; }
    int watch = inotify_add_watch(queue, parameter(request, "path"), IN_ALL_EVENTS);
    int saved = errno;
    close(queue);
    errno = saved;
    answer(reply, "inotify_add_watch", watch);
}

/* own?: chmod, utime and an xattr on a file of its own scratch folder. */
static void do_own(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request;
    (void)unused;
    int fd = open("mine.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) { answer(reply, "open", -1); return; }
    close(fd);
    if (chmod("mine.txt", 0644) != 0) { answer(reply, "chmod", -1); return; }
    struct timespec times[2] = { { 1, 0 }, { 1, 0 } };
    answer(reply, "utimensat", utimensat(AT_FDCWD, "mine.txt", times, 0));
}

/* setuid?: a file of its own made set-uid, by open and by fchmod. */
static void do_setuid(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request;
    (void)unused;
    int fd = open("planted", O_WRONLY | O_CREAT | O_CLOEXEC, 04755);
    if (fd >= 0) {
        close(fd);
        errno = EEXIST;
        answer(reply, "open(O_CREAT, 04755)", -1 + 2); /* made: reported as done */
        return;
    }
    int plain = open("plain", O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
    if (plain < 0) { answer(reply, "open", -1); return; }
    int changed = fchmod(plain, 02755);
    int saved = errno;
    close(plain);
    errno = saved;
    answer(reply, "fchmod", changed);
}

/* library?: the plug-in file itself, through the descriptor its worker
 * was handed: its mode and times. */
static void do_library(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request;
    (void)unused;
    if (fchmod(4, 0777) == 0) { answer(reply, "fchmod", 0); return; }
    answer(reply, "fchmod", -1);
}

/* plant?dir=D: a symlink D/escape to the root, for a grant to name. */
static void do_plant(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    char path[512];
    snprintf(path, sizeof path, "%s/escape", parameter(request, "dir"));
    answer(reply, "symlink", symlink("../../../../../../../../..", path));
}

/* sees?paths=A,B: for each path, r (readable), w (writable), x (there,
 * neither) or - (not there), as one word. */
static void do_sees(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    char paths[4096], seen[256];
    snprintf(paths, sizeof paths, "%s", parameter(request, "paths"));
    size_t count = 0;
    for (char *path = strtok(paths, ","); path && count + 1 < sizeof seen; path = strtok(NULL, ",")) {
        struct stat info;
        seen[count++] = stat(path, &info) != 0 ? '-' : access(path, W_OK) == 0 ? 'w' : access(path, R_OK) == 0 ? 'r' : 'x';
    }
    seen[count] = 0;
    const xcallback_param output[] = { { "seen", seen } };
    host->reply_success(reply, output, 1);
}

/* syscall?name=N: makes system call N with harmless arguments. */
static void do_syscall(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)unused;
    const char *name = parameter(request, "name");
    long result;
    errno = 0;
    if (strcmp(name, "keyctl") == 0) result = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0);
    else if (strcmp(name, "add_key") == 0) result = syscall(SYS_add_key, "user", "xcallback", "x", 1, -3);
    else if (strcmp(name, "name_to_handle_at") == 0) {
        char handle[256] = {0};
        int mount = 0;
        ((unsigned int *)handle)[0] = 128;
        result = syscall(SYS_name_to_handle_at, AT_FDCWD, "/", handle, &mount, 0);
    }
    else if (strcmp(name, "quotactl") == 0) result = syscall(SYS_quotactl, 0, "/", 0, NULL);
    else if (strcmp(name, "acct") == 0) result = syscall(SYS_acct, NULL);
    else if (strcmp(name, "syslog") == 0) result = syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
    else if (strcmp(name, "fanotify_init") == 0) result = syscall(SYS_fanotify_init, 0, 0);
    else if (strcmp(name, "userfaultfd") == 0) result = syscall(SYS_userfaultfd, 0);
    else if (strcmp(name, "perf_event_open") == 0) result = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
    else if (strcmp(name, "chroot") == 0) result = syscall(SYS_chroot, "/");
    else if (strcmp(name, "past-last") == 0) result = syscall(1000);
    else if (strcmp(name, "memfd_create") == 0) result = syscall(SYS_memfd_create, "x", 0);
    else if (strcmp(name, "openat2") == 0) {
        unsigned long long how[3] = { O_RDONLY, 0, 0 };
        result = syscall(SYS_openat2, AT_FDCWD, "/", how, sizeof how);
    }
    else if (strcmp(name, "clone-newuser") == 0) {
        result = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (result == 0) _exit(0);
        if (result > 0) waitpid((pid_t)result, NULL, 0);
    }
    else { errno = EINVAL; result = -1; }
    answer(reply, name, result);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    host = api;
    struct { const char *action; xcallback_handler handler; } routes[] = {
        {"chmod", do_chmod}, {"utime", do_utime}, {"setxattr", do_setxattr}, {"stat", do_stat},
        {"inotify", do_inotify}, {"own", do_own}, {"syscall", do_syscall}, {"setuid", do_setuid},
        {"library", do_library}, {"plant", do_plant}, {"sees", do_sees},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        int rc = api->register_action(plugin, "contain", routes[i].action, routes[i].handler, NULL);
        if (rc != XCALLBACK_OK) return rc;
    }
    return XCALLBACK_OK;
}
"""#
}
