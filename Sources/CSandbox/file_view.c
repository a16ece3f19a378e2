#define _GNU_SOURCE
#include "file_view_parts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A worker's file view, built the way bubblewrap builds a sandbox's root:
 * nothing is there unless it is bound in. The host's file system stays in
 * the old root until the last step detaches it, so every source is looked
 * up before anything moves; after the view is built, the plug-in can reach
 * no file the list does not name, and stat, inotify or chmod of any other
 * path fails with ENOENT.
 *
 * Steps: open every source (O_PATH) while the host's root is whole; make
 * every mount private (nothing made here reaches the host); mount the new
 * root, a small tmpfs, on /tmp; bind each entry from its open descriptor
 * (so a source beneath /tmp is still reached) and make it read-only unless
 * it is written; mount the scratch tmpfs; make the new root read-only;
 * pivot into it and detach the host's. */

/* Where the new root is built before the pivot. */
#define VIEW_ROOT "/tmp"

int xcallback_view_set_attributes(int directory, const char *path, unsigned flags, uint64_t set, uint64_t clear,
                                  uint64_t propagation) {
    /* The kernel's structure (Linux 5.12). */
    struct {
        uint64_t attr_set;
        uint64_t attr_clr;
        uint64_t propagation;
        uint64_t userns_fd;
    } attributes = {set, clear, propagation, 0};
    return (int)syscall(SYS_mount_setattr, directory, path, flags, &attributes, sizeof attributes);
}

int xcallback_view_open_for(int mount, int kind) {
    kind &= 0xF;
    if (kind == XCALLBACK_VIEW_READ) return 0;
    uint64_t clear = XCALLBACK_MOUNT_RDONLY | (kind == XCALLBACK_VIEW_DEVICE ? XCALLBACK_MOUNT_NODEV : 0);
    return xcallback_view_set_attributes(mount, "", XCALLBACK_AT_EMPTY_PATH, 0, clear, 0);
}

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
struct open_how_v1 {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};
enum { RESOLVE_NO_SYMLINKS_ = 0x04 };

typedef xcallback_failure_note failure_note;

int xcallback_view_fail(failure_note *note, const char *step, const char *path) {
    int saved = errno;
    if (note->text && note->size) snprintf(note->text, note->size, "%s %s: %s", step, path ? path : "", strerror(saved));
    errno = saved;
    return -1;
}

/* The mount flags the kernel keeps locked on a bind made in a user
 * namespace: a read-only remount must repeat them or it is refused. */
static unsigned long locked_flags(const char *path) {
    struct statvfs info;
    if (statvfs(path, &info) != 0) return 0;
    unsigned long flags = 0;
    if (info.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (info.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (info.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (info.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (info.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (info.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    return flags;
}

/* Opens the folder that will hold `path` in the view (absolute, as the
 * worker names it), making each folder on the way, one component at a
 * time from the view's root and never through a symlink: a folder bound
 * read-write may hold one a plug-in planted (or swaps in while the view is
 * built). Returns the folder's descriptor and copies the last component
 * into `last`; -1 with errno (ELOOP for a symlink on the way). */
int xcallback_view_open_parent(int root, const char *path, char *last, size_t last_size) {
    int folder = fcntl(root, F_DUPFD_CLOEXEC, 3);
    if (folder < 0) return -1;
    const char *cursor = path;
    for (;;) {
        while (*cursor == '/') cursor++;
        const char *end = strchr(cursor, '/');
        size_t length = end ? (size_t)(end - cursor) : strlen(cursor);
        while (end && end[1] == '/') end++;
        int is_last = end == NULL || end[1] == 0;
        if (length == 0 || length >= last_size || length >= NAME_MAX + 1
            || (length == 1 && cursor[0] == '.') || (length == 2 && cursor[0] == '.' && cursor[1] == '.')) {
            close(folder);
            errno = EINVAL;
            return -1;
        }
        memcpy(last, cursor, length);
        last[length] = 0;
        if (is_last) return folder;
        if (mkdirat(folder, last, 0755) != 0 && errno != EEXIST) {
            int saved = errno;
            close(folder);
            errno = saved;
            return -1;
        }
        int next = openat(folder, last, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        int saved = errno;
        close(folder);
        if (next < 0) {
            errno = saved == ENOTDIR ? ELOOP : saved;
            return -1;
        }
        folder = next;
        cursor = end + 1;
    }
}

/* "/proc/self/fd/N": a descriptor as a path mount(2) follows to its file. */
void xcallback_view_descriptor_path(char *buffer, size_t size, int descriptor) {
    snprintf(buffer, size, "/proc/self/fd/%d", descriptor);
}

typedef xcallback_resolved_entry resolved_entry;

void xcallback_view_resolve(const xcallback_view_entry *entry, resolved_entry *out) {
    memset(out, 0, sizeof *out);
    out->source = -1;
    out->mounted = -1;
    struct stat info;
    if (lstat(entry->path, &info) != 0) return;
    if (S_ISLNK(info.st_mode) && !(entry->kind & XCALLBACK_VIEW_FOLLOW)) {
        ssize_t length = readlink(entry->path, out->link, sizeof out->link - 1);
        if (length <= 0) return;
        out->link[length] = 0;
        out->is_link = 1;
        out->present = 1;
        return;
    }
    /* A granted path is taken as written, never through a symlink: one
     * planted in a folder a plug-in may write would bind whatever it
     * names (the host's root, say) into the view. */
    if (entry->kind & XCALLBACK_VIEW_GRANTED) {
        struct open_how_v1 how = {O_PATH | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS_};
        out->source = (int)syscall(SYS_openat2, AT_FDCWD, entry->path, &how, sizeof how);
        if (out->source < 0 && errno == ENOSYS) out->source = open(entry->path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
        if (out->source < 0 && (errno == ELOOP || errno == ENOTDIR)) out->refused = 1;
    } else {
        out->source = open(entry->path, O_PATH | O_CLOEXEC);
    }
    out->present = out->source >= 0;
}

int xcallback_view_make_point(failure_note *note, int parent, const char *last, const char *path,
                              const resolved_entry *resolved, int *point) {
    *point = -1;
    if (resolved->is_link) {
        /* A later entry may have made it already (a folder bound beneath it). */
        if (symlinkat(resolved->link, parent, last) != 0 && errno != EEXIST) return xcallback_view_fail(note, "symlink", path);
        return 0;
    }
    struct stat info;
    if (fstat(resolved->source, &info) != 0) return xcallback_view_fail(note, "stat", path);
    if (S_ISDIR(info.st_mode)) {
        if (mkdirat(parent, last, 0755) != 0 && errno != EEXIST) return xcallback_view_fail(note, "make", path);
    } else {
        int made = openat(parent, last, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (made < 0 && errno != EEXIST && errno != EISDIR && errno != EROFS) return xcallback_view_fail(note, "make", path);
        if (made >= 0) close(made);
    }
    *point = xcallback_view_open_point(parent, last);
    if (*point < 0) {
        errno = ELOOP;
        return xcallback_view_fail(note, "mount point", path);
    }
    return 0;
}

int xcallback_view_open_point(int parent, const char *last) {
    int point = openat(parent, last, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat placed;
    if (point >= 0 && (fstat(point, &placed) != 0 || S_ISLNK(placed.st_mode))) {
        close(point);
        errno = ELOOP;
        return -1;
    }
    return point;
}

/* Binds one entry beneath the view's `root`; its read-only remount only
 * when `remount` (kernels without mount_setattr: see xcallback_build_view).
 * Leaves the bind's own descriptor in `resolved->mounted`. */
static int bind_entry(failure_note *note, int root, const xcallback_view_entry *entry, resolved_entry *resolved,
                      int remount) {
    char last[NAME_MAX + 1], source[64], target[64];
    int parent = xcallback_view_open_parent(root, entry->path, last, sizeof last);
    if (parent < 0) return xcallback_view_fail(note, "make the folders of", entry->path);
    int point = -1;
    int made = xcallback_view_make_point(note, parent, last, entry->path, resolved, &point);
    if (made != 0 || point < 0) { /* failed, or a symlink: nothing to bind */
        int saved = errno;
        close(parent);
        errno = saved;
        return made;
    }
    xcallback_view_descriptor_path(source, sizeof source, resolved->source);
    xcallback_view_descriptor_path(target, sizeof target, point);
    int bound = mount(source, target, NULL, MS_BIND | MS_REC, NULL);
    int saved = errno;
    close(point);
    if (bound != 0) {
        close(parent);
        errno = saved;
        return xcallback_view_fail(note, "bind", entry->path);
    }
    /* Opened again through its parent: now it names the bind's root. */
    resolved->mounted = openat(parent, last, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    close(parent);
    if (resolved->mounted < 0) return xcallback_view_fail(note, "open the bind", entry->path);
    if (!remount) return 0;
    xcallback_view_descriptor_path(target, sizeof target, resolved->mounted);
    int kind = entry->kind & 0xF;
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | locked_flags(target);
    if (kind == XCALLBACK_VIEW_READ) flags |= MS_RDONLY;
    if (kind != XCALLBACK_VIEW_DEVICE) flags |= MS_NODEV;
    if (mount(NULL, target, NULL, flags, NULL) != 0) return xcallback_view_fail(note, "remount", entry->path);
    return 0;
}

uint64_t xcallback_view_scratch_inodes(uint64_t bytes) {
    /* nr_inodes bounds its files (an inode costs the kernel memory no size
     * counts): 256 a MiB. */
    return bytes / 4096 < 1024 ? 1024 : bytes / 4096;
}

void xcallback_view_scratch_options(char *buffer, size_t size, uint64_t bytes, uint32_t owner, uint32_t group) {
    snprintf(buffer, size, "mode=0700,size=%llu,nr_inodes=%llu,uid=%u,gid=%u", (unsigned long long)bytes,
             (unsigned long long)xcallback_view_scratch_inodes(bytes), owner, group);
}

int xcallback_view_compare_entries(const void *left, const void *right) {
    return strcmp(((const xcallback_view_entry *)left)->path, ((const xcallback_view_entry *)right)->path);
}

int xcallback_build_view(const xcallback_view_entry *entries, int count, const char *scratch, uint64_t scratch_bytes,
                         int scratch_exec, uint32_t owner, uint32_t group, char *failure, unsigned long failure_size) {
    failure_note note = {failure, failure_size};
    if (failure && failure_size) failure[0] = 0;
    /* Never a program's folder, even with exec: programs come from the
     * system's folders only. */
    (void)scratch_exec;
    if (count < 0 || scratch == NULL || scratch[0] != '/') {
        errno = EINVAL;
        return xcallback_view_fail(&note, "arguments", NULL);
    }
    if (xcallback_view_template_usable(entries, count))
        return xcallback_view_build_from_template(entries, count, scratch, scratch_bytes, owner, group, &note);
    return xcallback_view_build_whole(entries, count, scratch, scratch_bytes, owner, group, &note, NULL);
}

int xcallback_view_build_whole(const xcallback_view_entry *entries, int count, const char *scratch,
                               uint64_t scratch_bytes, uint32_t owner, uint32_t group, failure_note *note_,
                               int *writable_root) {
    failure_note note = *note_;
    /* Parents before children, so a folder bound beneath another lands on
     * top of it rather than under it. */
    xcallback_view_entry *sorted = count ? calloc((size_t)count, sizeof *sorted) : NULL;
    resolved_entry *resolved = count ? calloc((size_t)count, sizeof *resolved) : NULL;
    if (count && (sorted == NULL || resolved == NULL)) {
        free(sorted);
        free(resolved);
        errno = ENOMEM;
        return xcallback_view_fail(&note, "memory", NULL);
    }
    if (count > 0) memcpy(sorted, entries, (size_t)count * sizeof *sorted);
    qsort(sorted, (size_t)count, sizeof *sorted, xcallback_view_compare_entries);
    for (int i = 0; i < count; i++) xcallback_view_resolve(&sorted[i], &resolved[i]);

    int result = -1, root = -1, scratch_point = -1;
    char options[160], target[64];
    for (int i = 0; i < count; i++) {
        if (resolved[i].refused) {
            errno = ELOOP;
            xcallback_view_fail(&note, "a granted path runs through a symlink:", sorted[i].path);
            goto done;
        }
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) { xcallback_view_fail(&note, "make mounts private", "/"); goto done; }
    if (mount("xcallback-root", VIEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) {
        xcallback_view_fail(&note, "mount tmpfs", VIEW_ROOT);
        goto done;
    }
    if (writable_root) {
        /* The template's: its root a bind of the tmpfs over itself, made
         * read-only below, while this descriptor keeps the first mount,
         * which stays writable for the mount points workers add. */
        *writable_root = open(VIEW_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (*writable_root < 0) { xcallback_view_fail(&note, "open", VIEW_ROOT); goto done; }
        if (mount(VIEW_ROOT, VIEW_ROOT, NULL, MS_BIND, NULL) != 0) { xcallback_view_fail(&note, "bind", VIEW_ROOT); goto done; }
    }
    root = open(VIEW_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) { xcallback_view_fail(&note, "open", VIEW_ROOT); goto done; }

    /* Every bind is made read-only, no-suid and no-dev in one call for the
     * whole tree, and the written ones and the devices are opened again,
     * where the kernel has mount_setattr; else one remount a bind. Each
     * mount operation can cost a millisecond on a busy machine, and a
     * worker has twenty binds. */
    int one_pass = xcallback_view_set_attributes(AT_FDCWD, VIEW_ROOT, 0, 0, 0, 0) == 0;
    for (int i = 0; i < count; i++) {
        if (!resolved[i].present) continue;
        if (bind_entry(&note, root, &sorted[i], &resolved[i], !one_pass) != 0) goto done;
    }
    /* The scratch folder's mount point, while the root can still be
     * written (a bound parent holds it already: the worker made it). */
    if (scratch) {
        char last[NAME_MAX + 1];
        int parent = xcallback_view_open_parent(root, scratch, last, sizeof last);
        if (parent < 0) { xcallback_view_fail(&note, "make the folders of", scratch); goto done; }
        if (mkdirat(parent, last, 0700) != 0 && errno != EEXIST) {
            close(parent);
            xcallback_view_fail(&note, "mkdir", scratch);
            goto done;
        }
        scratch_point = openat(parent, last, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        close(parent);
        if (scratch_point < 0) { xcallback_view_fail(&note, "open", scratch); goto done; }
    }
    if (one_pass) {
        if (xcallback_view_set_attributes(AT_FDCWD, VIEW_ROOT, XCALLBACK_AT_RECURSIVE,
                                          XCALLBACK_MOUNT_RDONLY | XCALLBACK_MOUNT_NOSUID | XCALLBACK_MOUNT_NODEV, 0, 0) != 0) {
            xcallback_view_fail(&note, "make the view read-only", "/");
            goto done;
        }
        /* Each written bind and device opened again, alone: a read-only
         * grant beneath a written one stays read-only. */
        for (int i = 0; i < count; i++) {
            if (resolved[i].mounted >= 0 && xcallback_view_open_for(resolved[i].mounted, sorted[i].kind) != 0) {
                xcallback_view_fail(&note, "open for writing", sorted[i].path);
                goto done;
            }
        }
    }

    if (scratch) {
        xcallback_view_scratch_options(options, sizeof options, scratch_bytes, owner, group);
        xcallback_view_descriptor_path(target, sizeof target, scratch_point);
        if (mount("xcallback-scratch", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options) != 0) {
            xcallback_view_fail(&note, "mount tmpfs", scratch);
            goto done;
        }
    }
    /* The root itself: nothing may be made beside what is bound. */
    if (!one_pass && mount(NULL, VIEW_ROOT, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0) {
        xcallback_view_fail(&note, "remount read-only", "/");
        goto done;
    }
    /* pivot_root(".", ".") stacks the host's root on the new one;
     * detaching it takes the host's whole file system with it. */
    if (chdir(VIEW_ROOT) != 0) { xcallback_view_fail(&note, "chdir", VIEW_ROOT); goto done; }
    if (syscall(SYS_pivot_root, ".", ".") != 0) { xcallback_view_fail(&note, "pivot_root", VIEW_ROOT); goto done; }
    if (umount2(".", MNT_DETACH) != 0) { xcallback_view_fail(&note, "detach the host's root", NULL); goto done; }
    if (chdir("/") != 0) { xcallback_view_fail(&note, "chdir", "/"); goto done; }
    result = 0;
done:
    for (int i = 0; i < count; i++) {
        if (resolved[i].source >= 0) close(resolved[i].source);
        if (resolved[i].mounted >= 0) close(resolved[i].mounted);
    }
    if (root >= 0) close(root);
    if (scratch_point >= 0) close(scratch_point);
    free(sorted);
    free(resolved);
    return result;
}

int xcallback_become(uint32_t uid, uint32_t gid) {
    for (int capability = 0; capability < 64; capability++) {
        if (prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0) {
            if (errno == EINVAL) break;
            if (errno != EPERM) return -1;
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    pid_t parent = getppid();
    /* Raw calls: glibc's wrappers signal every thread to change together,
     * and there is only this one. */
    if (syscall(SYS_setgroups, 0, NULL) != 0) return -1;
    if (syscall(SYS_setresgid, gid, gid, gid) != 0) return -1;
    if (syscall(SYS_setresuid, uid, uid, uid) != 0) return -1;
    if (getuid() != uid || geteuid() != uid || getgid() != gid) {
        errno = EPERM;
        return -1;
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return -1;
    /* The parent may have died between the change and the line above. */
    if (getppid() != parent) {
        errno = ESRCH;
        return -1;
    }
    return 0;
}
