#define _GNU_SOURCE
#include "file_view_parts.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The part of every worker's file view that does not depend on its
 * plug-in (the library folders, the Swift runtime's, time-zone data, the
 * devices), built once, in a mount namespace of its own, by the zygote.
 *
 * Building a whole view costs a worker twenty binds, a pivot and the
 * detach of the host's root, and the detach waits for an RCU grace period:
 * a hundred workers starting at once queued on the kernel's mount lock
 * for about a millisecond each. From the template, a worker clones only
 * what is its own while it still sees the host's files (its plug-in's
 * folder, /proc/self, its grants), joins the template's namespace, takes a
 * private copy of it (a few mounts, none of the host's, so nothing to
 * detach) and moves its clones in. What the plug-in can see is the same
 * either way: an empty read-only root with those paths bound in.
 *
 * Root only: a process without CAP_SYS_ADMIN in the initial user namespace
 * can neither clone a tree of the host's mounts nor join a namespace it
 * does not own, so an ordinary user's workers build the whole view. */

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif

/* The new mount API's constants (Linux 5.2), spelled out: Debian's headers
 * predate some of them. */
enum {
    OPEN_TREE_CLONE_ = 1,
    OPEN_TREE_CLOEXEC_ = O_CLOEXEC,
    MOVE_MOUNT_F_EMPTY_PATH_ = 0x4,
    MOVE_MOUNT_T_EMPTY_PATH_ = 0x40,
    FSOPEN_CLOEXEC_ = 0x1,
    FSCONFIG_SET_STRING_ = 1,
    FSCONFIG_CMD_CREATE_ = 6,
    FSMOUNT_CLOEXEC_ = 0x1,
};

/* This process's template: made once by the zygote, copied into each
 * worker by fork, released by the worker before any plug-in code runs.
 * Global because fork is how it travels, and the fork paths in C must keep
 * its two descriptors open (xcallback_view_template_descriptors). */
static struct {
    int namespace_fd;  /* the template's mount namespace */
    int writable_root; /* its root tmpfs, writable: workers make their mount points there */
    int count;
    xcallback_view_entry *entries; /* what it holds: a worker skips these */
} template_ = {-1, -1, 0, NULL};

static int clone_tree(int source, unsigned flags) {
    return (int)syscall(SYS_open_tree, source, "", OPEN_TREE_CLONE_ | OPEN_TREE_CLOEXEC_ | XCALLBACK_AT_EMPTY_PATH | flags);
}

static int move_tree(int tree, int point) {
    return (int)syscall(SYS_move_mount, tree, "", point, "", MOVE_MOUNT_F_EMPTY_PATH_ | MOVE_MOUNT_T_EMPTY_PATH_);
}

/* Moved above the numbers a forked worker's descriptors are placed on
 * (WorkerZygote), so placing them never lands on the template's. */
static int high_descriptor(int descriptor) {
    if (descriptor < 0 || descriptor >= 64) return descriptor;
    int moved = fcntl(descriptor, F_DUPFD_CLOEXEC, 64);
    int saved = errno;
    close(descriptor);
    errno = saved;
    return moved;
}

void xcallback_view_template_release(void) {
    if (template_.namespace_fd >= 0) close(template_.namespace_fd);
    if (template_.writable_root >= 0) close(template_.writable_root);
    for (int i = 0; i < template_.count; i++) free((char *)template_.entries[i].path);
    free(template_.entries);
    template_.namespace_fd = template_.writable_root = -1;
    template_.count = 0;
    template_.entries = NULL;
}

int xcallback_view_template_descriptors(int *descriptors, int capacity) {
    if (template_.namespace_fd < 0 || capacity < 2) return 0;
    descriptors[0] = template_.namespace_fd;
    descriptors[1] = template_.writable_root;
    return 2;
}

int xcallback_view_template_ready(void) { return template_.namespace_fd >= 0; }

int xcallback_view_template_make(const xcallback_view_entry *entries, int count, char *failure,
                                 unsigned long failure_size) {
    xcallback_failure_note note = {failure, failure_size};
    if (failure && failure_size) failure[0] = 0;
    xcallback_view_template_release();
    if (count < 0) {
        errno = EINVAL;
        return xcallback_view_fail(&note, "arguments", NULL);
    }
    if (geteuid() != 0) {
        errno = EPERM;
        return xcallback_view_fail(&note, "a template needs root:", "each worker builds its whole view");
    }
    /* open_tree and move_mount (Linux 5.2), mount_setattr (5.12). */
    if ((syscall(SYS_open_tree, -1, "", 0) < 0 && errno == ENOSYS)
        || (xcallback_view_set_attributes(-1, "", XCALLBACK_AT_EMPTY_PATH, XCALLBACK_MOUNT_RDONLY, 0, 0) < 0
            && errno == ENOSYS)) {
        errno = ENOSYS;
        return xcallback_view_fail(&note, "this kernel has no", "open_tree or mount_setattr");
    }
    xcallback_view_entry *copies = count ? calloc((size_t)count, sizeof *copies) : NULL;
    if (count && copies == NULL) {
        errno = ENOMEM;
        return xcallback_view_fail(&note, "memory", NULL);
    }
    for (int i = 0; i < count; i++) {
        copies[i].kind = entries[i].kind;
        copies[i].path = strdup(entries[i].path);
        if (copies[i].path == NULL) {
            for (int j = 0; j < i; j++) free((char *)copies[j].path);
            free(copies);
            errno = ENOMEM;
            return xcallback_view_fail(&note, "memory", NULL);
        }
    }

    /* A child builds it in a namespace of its own and waits; the parent
     * opens that namespace and the writable root through /proc (which
     * keeps both alive), then lets the child go. */
    int report[2], release[2];
    if (pipe2(report, O_CLOEXEC) != 0) goto failed_early;
    if (pipe2(release, O_CLOEXEC) != 0) {
        close(report[0]);
        close(report[1]);
        goto failed_early;
    }
    pid_t child = fork();
    if (child < 0) {
        close(report[0]);
        close(report[1]);
        close(release[0]);
        close(release[1]);
        goto failed_early;
    }
    if (child == 0) {
        close(report[0]);
        close(release[1]);
        char text[512] = {0};
        xcallback_failure_note child_note = {text, sizeof text};
        int writable = -1;
        int built = unshare(CLONE_NEWNS) == 0
            ? xcallback_view_build_whole(copies, count, NULL, 0, 0, 0, &child_note, &writable)
            : xcallback_view_fail(&child_note, "unshare", "a mount namespace");
        char message[16 + sizeof text];
        int length = built == 0 ? snprintf(message, sizeof message, "ok %d", writable)
                                : snprintf(message, sizeof message, "no %s", text);
        if (write(report[1], message, (size_t)length) != length) _exit(1);
        char wait_for;
        while (read(release[0], &wait_for, 1) < 0 && errno == EINTR) {}
        _exit(0);
    }
    close(report[1]);
    close(release[0]);
    char message[600] = {0};
    ssize_t length;
    while ((length = read(report[0], message, sizeof message - 1)) < 0 && errno == EINTR) {}
    close(report[0]);
    int result = -1;
    int writable = -1;
    if (length > 3 && strncmp(message, "ok ", 3) == 0 && sscanf(message + 3, "%d", &writable) == 1) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)child);
        template_.namespace_fd = high_descriptor(open(path, O_RDONLY | O_CLOEXEC));
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)child, writable);
        template_.writable_root = high_descriptor(open(path, O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (template_.namespace_fd >= 0 && template_.writable_root >= 0) {
            result = 0;
        } else {
            xcallback_view_fail(&note, "open the template's", path);
        }
    } else {
        errno = EPERM;
        xcallback_view_fail(&note, "build the template:", length > 3 ? message + 3 : "its builder ended");
    }
    int saved = errno;
    close(release[1]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    if (result == 0) {
        template_.entries = copies;
        template_.count = count;
        return 0;
    }
    xcallback_view_template_release();
    for (int i = 0; i < count; i++) free((char *)copies[i].path);
    free(copies);
    errno = saved;
    return -1;
failed_early:
    saved = errno;
    for (int i = 0; i < count; i++) free((char *)copies[i].path);
    free(copies);
    errno = saved;
    return xcallback_view_fail(&note, "start the template's builder", NULL);
}

static int in_template(const xcallback_view_entry *entry) {
    for (int i = 0; i < template_.count; i++) {
        if (template_.entries[i].kind == entry->kind && strcmp(template_.entries[i].path, entry->path) == 0) return 1;
    }
    return 0;
}

/* Whether `path` is `ancestor` or lies beneath it. */
static int beneath(const char *path, const char *ancestor) {
    size_t length = strlen(ancestor);
    if (length == 1 && ancestor[0] == '/') return 1;
    return strncmp(path, ancestor, length) == 0 && (path[length] == 0 || path[length] == '/');
}

int xcallback_view_template_usable(const xcallback_view_entry *entries, int count) {
    if (template_.namespace_fd < 0) return 0;
    for (int i = 0; i < count; i++) {
        if (in_template(&entries[i])) continue;
        /* A worker's own entry above one of the template's (a grant of /dev
         * or /etc) would cover it, where a view built whole binds the inner
         * one on top: that view is built whole. */
        for (int j = 0; j < template_.count; j++) {
            if (beneath(template_.entries[j].path, entries[i].path)) return 0;
        }
        /* A symlink made again would be made in the template's root, for
         * every worker to come: built whole, in a root of its own. */
        struct stat info;
        if (!(entries[i].kind & XCALLBACK_VIEW_FOLLOW) && lstat(entries[i].path, &info) == 0 && S_ISLNK(info.st_mode))
            return 0;
    }
    return 1;
}

/* A detached tmpfs for the scratch folder, made with the new mount API so
 * it is moved onto its mount point by descriptor, like every clone. */
static int scratch_tmpfs(uint64_t bytes, uint32_t owner, uint32_t group) {
    int context = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC_);
    if (context < 0) return -1;
    char size[32], inodes[32], uid[16], gid[16];
    snprintf(size, sizeof size, "%llu", (unsigned long long)bytes);
    snprintf(inodes, sizeof inodes, "%llu", (unsigned long long)xcallback_view_scratch_inodes(bytes));
    snprintf(uid, sizeof uid, "%u", owner);
    snprintf(gid, sizeof gid, "%u", group);
    const char *options[][2] = {{"mode", "0700"}, {"size", size}, {"nr_inodes", inodes}, {"uid", uid}, {"gid", gid},
                                {"source", "xcallback-scratch"}};
    int made = 0;
    for (size_t i = 0; i < sizeof options / sizeof options[0] && made == 0; i++) {
        made = (int)syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING_, options[i][0], options[i][1], 0);
    }
    if (made == 0) made = (int)syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE_, NULL, NULL, 0);
    int tree = made == 0
        ? (int)syscall(SYS_fsmount, context, FSMOUNT_CLOEXEC_, XCALLBACK_MOUNT_NOSUID | XCALLBACK_MOUNT_NODEV | XCALLBACK_MOUNT_NOEXEC)
        : -1;
    int saved = errno;
    close(context);
    errno = saved;
    return tree;
}

/* Opens the mount point of `path` beneath `root` without a symlink on the
 * way or at its end. */
static int open_point(int root, const char *path) {
    char last[NAME_MAX + 1];
    int parent = xcallback_view_open_parent(root, path, last, sizeof last);
    if (parent < 0) return -1;
    int point = xcallback_view_open_point(parent, last);
    int saved = errno;
    close(parent);
    errno = saved;
    return point;
}

int xcallback_view_build_from_template(const xcallback_view_entry *entries, int count, const char *scratch,
                                       uint64_t scratch_bytes, uint32_t owner, uint32_t group,
                                       xcallback_failure_note *note) {
    xcallback_view_entry *own = count ? calloc((size_t)count, sizeof *own) : NULL;
    xcallback_resolved_entry *resolved = count ? calloc((size_t)count, sizeof *resolved) : NULL;
    int *trees = count ? calloc((size_t)count, sizeof *trees) : NULL;
    if (count && (own == NULL || resolved == NULL || trees == NULL)) {
        free(own);
        free(resolved);
        free(trees);
        errno = ENOMEM;
        return xcallback_view_fail(note, "memory", NULL);
    }
    /* Only what is the worker's own, parents before children. */
    int owned = 0;
    for (int i = 0; i < count; i++) {
        if (!in_template(&entries[i])) own[owned++] = entries[i];
    }
    qsort(own, (size_t)owned, sizeof *own, xcallback_view_compare_entries);
    for (int i = 0; i < owned; i++) {
        trees[i] = -1;
        xcallback_view_resolve(&own[i], &resolved[i]);
    }
    int result = -1, root = -1, scratch_tree = -1;
    char last[NAME_MAX + 1];

    /* In the host's namespace still: each source cloned, and its mount
     * point made in the template's root (shared by every worker, and
     * empty: what a worker mounts there is its own). A mount point some
     * earlier worker made of another kind (a folder where this one needs a
     * file), or a symlink to make, and the template cannot serve this
     * view: it is built whole, in a root of its own, as it was before. */
    int whole = 0;
    for (int i = 0; i < owned && !whole; i++) {
        if (resolved[i].refused) {
            errno = ELOOP;
            xcallback_view_fail(note, "a granted path runs through a symlink:", own[i].path);
            goto done;
        }
        if (!resolved[i].present) continue;
        if (resolved[i].is_link) {
            whole = 1;
            break;
        }
        int parent = xcallback_view_open_parent(template_.writable_root, own[i].path, last, sizeof last);
        if (parent < 0) {
            whole = 1;
            break;
        }
        int point = -1;
        int made = xcallback_view_make_point(note, parent, last, own[i].path, &resolved[i], &point);
        close(parent);
        struct stat placed, source;
        int fits = made == 0 && point >= 0 && fstat(point, &placed) == 0 && fstat(resolved[i].source, &source) == 0
            && S_ISDIR(placed.st_mode) == S_ISDIR(source.st_mode);
        if (point >= 0) close(point);
        if (!fits) {
            whole = 1;
            break;
        }
        trees[i] = clone_tree(resolved[i].source, XCALLBACK_AT_RECURSIVE);
        if (trees[i] < 0) {
            xcallback_view_fail(note, "clone", own[i].path);
            goto done;
        }
        /* Read-only, no-suid and no-dev through the whole tree, private
         * (nothing mounted on the host's side beneath it later reaches the
         * worker), then opened again as its kind needs, as a bind of a view
         * built whole is. */
        if (xcallback_view_set_attributes(trees[i], "", XCALLBACK_AT_EMPTY_PATH | XCALLBACK_AT_RECURSIVE,
                                          XCALLBACK_MOUNT_RDONLY | XCALLBACK_MOUNT_NOSUID | XCALLBACK_MOUNT_NODEV, 0,
                                          MS_PRIVATE) != 0
            || xcallback_view_open_for(trees[i], own[i].kind) != 0) {
            xcallback_view_fail(note, "set the rights of", own[i].path);
            goto done;
        }
    }
    if (!whole) {
        int parent = xcallback_view_open_parent(template_.writable_root, scratch, last, sizeof last);
        int made = parent >= 0 && (mkdirat(parent, last, 0700) == 0 || errno == EEXIST) ? 0 : -1;
        if (parent >= 0) close(parent);
        if (made != 0) whole = 1;
    }
    if (whole) {
        for (int i = 0; i < owned; i++) {
            if (resolved[i].source >= 0) close(resolved[i].source);
            if (trees[i] >= 0) close(trees[i]);
            resolved[i].source = trees[i] = -1;
        }
        if (note->text && note->size) note->text[0] = 0;
        result = unshare(CLONE_NEWNS) == 0
            ? xcallback_view_build_whole(entries, count, scratch, scratch_bytes, owner, group, note, NULL)
            : xcallback_view_fail(note, "enter a mount namespace", NULL);
        goto done;
    }
    scratch_tree = scratch_tmpfs(scratch_bytes, owner, group);
    if (scratch_tree < 0) {
        xcallback_view_fail(note, "make the scratch tmpfs for", scratch);
        goto done;
    }

    /* Into a private copy of the template: its root becomes this process's
     * root, and the host's mounts are not in it. */
    if (setns(template_.namespace_fd, CLONE_NEWNS) != 0) {
        xcallback_view_fail(note, "join the template's namespace", NULL);
        goto done;
    }
    if (unshare(CLONE_NEWNS) != 0) {
        xcallback_view_fail(note, "copy the template's namespace", NULL);
        goto done;
    }
    root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        xcallback_view_fail(note, "open", "/");
        goto done;
    }
    for (int i = 0; i < owned; i++) {
        if (trees[i] < 0) continue;
        int point = open_point(root, own[i].path);
        if (point < 0 || move_tree(trees[i], point) != 0) {
            if (point >= 0) close(point);
            xcallback_view_fail(note, "mount", own[i].path);
            goto done;
        }
        close(point);
    }
    int point = open_point(root, scratch);
    if (point < 0 || move_tree(scratch_tree, point) != 0) {
        if (point >= 0) close(point);
        xcallback_view_fail(note, "mount tmpfs", scratch);
        goto done;
    }
    close(point);
    if (chdir("/") != 0) {
        xcallback_view_fail(note, "chdir", "/");
        goto done;
    }
    result = 0;
done:;
    int saved = errno;
    for (int i = 0; i < owned; i++) {
        if (resolved[i].source >= 0) close(resolved[i].source);
        if (trees[i] >= 0) close(trees[i]);
    }
    if (root >= 0) close(root);
    if (scratch_tree >= 0) close(scratch_tree);
    free(own);
    free(resolved);
    free(trees);
    /* The template is no business of the plug-in's. */
    xcallback_view_template_release();
    errno = saved;
    return result;
}
