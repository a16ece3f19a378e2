/* Removing a tree a plug-in wrote (its scratch folder), without ever
 * following a path it could change.
 *
 * The walk is descriptor-relative, as coreutils' `rm` (through gnulib's fts)
 * and systemd's rm_rf_children are: each folder is opened relative to the
 * descriptor of the folder that holds it, with O_NOFOLLOW, and its entries
 * are removed with unlinkat relative to that descriptor. A name is looked up
 * in one folder only, never as part of a longer path, so a folder swapped
 * for a symbolic link mid-walk (renameat2 with RENAME_EXCHANGE) is either
 * opened as the folder it was, or found to be a link and unlinked itself:
 * never followed. The nftw + remove(path) this replaces resolved the whole
 * path again for every file, and deleted files of the folder a link named.
 *
 * A mount point found inside is left alone (another device, or another
 * mount of the same file system: statx's mount id), and so is anything
 * deeper than REMOVE_TREE_MAX_DEPTH folders (each level holds one
 * descriptor). What is left makes the final rmdir fail: the caller learns
 * the tree was not wholly removed, never that something outside was. */

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "host_support.h"

#define REMOVE_TREE_MAX_DEPTH 64

/* Where the walk may go: the root's file system and mount. */
struct tree_place {
    dev_t device;
    unsigned long long mount;
    int has_mount;
};

/* The place of `name` in `directory` (AT_EMPTY_PATH with ""), never
 * following a link. Returns 0, or -1 with errno set. */
static int place_of(int directory, const char *name, struct tree_place *place, mode_t *mode, uid_t *owner) {
#if defined(STATX_MNT_ID)
    struct statx info;
    int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] == 0 ? AT_EMPTY_PATH : 0);
    if (statx(directory, name, flags, STATX_TYPE | STATX_MODE | STATX_UID | STATX_MNT_ID, &info) == 0) {
        place->device = makedev(info.stx_dev_major, info.stx_dev_minor);
        place->has_mount = (info.stx_mask & STATX_MNT_ID) != 0;
        place->mount = place->has_mount ? info.stx_mnt_id : 0;
        *mode = info.stx_mode;
        *owner = info.stx_uid;
        return 0;
    }
    if (errno != ENOSYS) return -1;
#endif
    struct stat plain;
    if (fstatat(directory, name, &plain, AT_SYMLINK_NOFOLLOW | (name[0] == 0 ? AT_EMPTY_PATH : 0)) != 0) return -1;
    place->device = plain.st_dev;
    place->has_mount = 0;
    place->mount = 0;
    *mode = plain.st_mode;
    *owner = plain.st_uid;
    return 0;
}

static int same_place(const struct tree_place *a, const struct tree_place *b) {
    if (a->device != b->device) return 0;
    return !(a->has_mount && b->has_mount) || a->mount == b->mount;
}

/* Opens the folder `name` in `parent` for reading, if it is a folder on
 * the root's mount (not a link, not a mount point). A folder its plug-in
 * made unreadable or unwritable (mode 0) is given back to its owner first,
 * through a descriptor of that very folder, never by path. */
static int open_folder(int parent, const char *name, const struct tree_place *root) {
    int handle = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (handle < 0) return -1;
    struct tree_place place;
    mode_t mode;
    uid_t owner;
    if (place_of(handle, "", &place, &mode, &owner) != 0) {
        close(handle);
        return -1;
    }
    if (!same_place(&place, root)) {
        close(handle);
        errno = EXDEV;
        return -1;
    }
    if ((mode & S_IRWXU) != S_IRWXU && owner == geteuid()) {
        /* chmod through /proc's link to this descriptor reaches the inode
           the descriptor holds, whatever its name is now. */
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", handle);
        (void)chmod(link, (mode & 07777) | S_IRWXU);
    }
    int folder = openat(handle, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int saved = errno;
    close(handle);
    errno = saved;
    return folder;
}

static int remove_entry(int parent, const char *name, const struct tree_place *root, int depth);

/* Removes everything in the open folder `folder`, one pass; 0 when every
 * entry went, or -1 with errno of the first that did not. */
static int empty_folder(int folder, const struct tree_place *root, int depth) {
    int copy = fcntl(folder, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return -1;
    DIR *stream = fdopendir(copy);
    if (stream == NULL) {
        int saved = errno;
        close(copy);
        errno = saved;
        return -1;
    }
    /* The copy shares the folder's offset: a later pass starts over. */
    rewinddir(stream);
    int failure = 0;
    while (1) {
        errno = 0;
        struct dirent *entry = readdir(stream);
        if (entry == NULL) {
            if (errno != 0 && failure == 0) failure = errno;
            break;
        }
        const char *name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        if (remove_entry(folder, name, root, depth) != 0 && failure == 0) failure = errno;
    }
    closedir(stream);
    if (failure != 0) {
        errno = failure;
        return -1;
    }
    return 0;
}

/* Removes the entry `name` of `parent`: a folder with what it holds,
 * anything else (a link included) itself. */
static int remove_entry(int parent, const char *name, const struct tree_place *root, int depth) {
    struct tree_place place;
    mode_t mode;
    uid_t owner;
    if (place_of(parent, name, &place, &mode, &owner) != 0) return errno == ENOENT ? 0 : -1;
    if (!same_place(&place, root)) {
        /* A mount point (a folder's or a file's): not the tree's to remove. */
        errno = EXDEV;
        return -1;
    }
    if (!S_ISDIR(mode)) {
        if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) return 0;
        /* It became a folder since it was looked at: walk it as one. */
        if (errno != EISDIR) return -1;
    }
    if (depth >= REMOVE_TREE_MAX_DEPTH) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int folder = open_folder(parent, name, root);
    if (folder < 0) {
        if (errno == ENOENT) return 0;
        /* No longer a folder (a link was swapped in): the entry itself goes. */
        if (errno == ELOOP || errno == ENOTDIR) return unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : -1;
        return -1;
    }
    int emptied = empty_folder(folder, root, depth + 1);
    int failure = emptied == 0 ? 0 : errno;
    close(folder);
    if (unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
    /* Swapped for a link after it was emptied: that goes, the folder (now
       under another name here) is met again or left. */
    if (errno == ENOTDIR) return unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    if (failure != 0) errno = failure;
    return -1;
}

int xcallback_remove_tree_at(int parent, const char *name, int held) {
    int folder;
    if (held >= 0) {
        folder = openat(held, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
        folder = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (folder < 0) return -1;
    struct tree_place root;
    mode_t mode;
    uid_t owner;
    if (place_of(folder, "", &root, &mode, &owner) != 0) {
        int saved = errno;
        close(folder);
        errno = saved;
        return -1;
    }
    /* Entries made while a pass ran (only a writer still alive could) may
       be missed by readdir: a few passes, then the rmdir says. */
    int emptied = -1;
    int failure = 0;
    for (int pass = 0; pass < 3 && emptied != 0; pass++) {
        emptied = empty_folder(folder, &root, 1);
        failure = errno;
    }
    /* The name is removed only while it still names the folder walked
       (rmdir removes nothing but an empty folder in any case). */
    struct stat walked, current;
    int same = fstat(folder, &walked) == 0 && fstatat(parent, name, &current, AT_SYMLINK_NOFOLLOW) == 0
        && walked.st_dev == current.st_dev && walked.st_ino == current.st_ino;
    close(folder);
    if (!same) {
        errno = ESTALE;
        return -1;
    }
    if (unlinkat(parent, name, AT_REMOVEDIR) == 0) return 0;
    if (emptied != 0 && errno == ENOTEMPTY) errno = failure;
    return -1;
}

int xcallback_remove_tree(const char *path) {
    /* The caller's own path: its folders are the caller's, only the last
       name is looked at without following a link. */
    size_t length = strlen(path);
    while (length > 1 && path[length - 1] == '/') length--;
    if (length == 0 || length >= PATH_MAX) {
        errno = EINVAL;
        return -1;
    }
    char copy[PATH_MAX];
    memcpy(copy, path, length);
    copy[length] = 0;
    char *slash = strrchr(copy, '/');
    const char *name = copy;
    int parent = AT_FDCWD;
    if (slash != NULL) {
        name = slash + 1;
        if (slash == copy) {
            parent = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        } else {
            *slash = 0;
            parent = open(copy, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
        if (parent < 0) return -1;
    }
    if (name[0] == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        if (parent != AT_FDCWD) close(parent);
        errno = EINVAL;
        return -1;
    }
    int result = xcallback_remove_tree_at(parent, name, -1);
    int saved = errno;
    if (parent != AT_FDCWD) close(parent);
    errno = saved;
    return result;
}
