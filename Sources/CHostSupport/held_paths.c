/* Files the host made where someone else may also write (a scratch folder,
 * the folder of a --socket or --metrics socket), reached later through a
 * descriptor of their folder and their identity, never by resolving their
 * path again: a name swapped for a link, or a folder on the way swapped
 * for one, since the host made the file cannot redirect a chmod or an
 * unlink to another file. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "host_support.h"

int xcallback_hold_folder(const char *path, int follow) {
    return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
}

int xcallback_identify_at(int folder, const char *name, unsigned long long *device, unsigned long long *inode) {
    struct stat info;
    if (fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    *device = (unsigned long long)info.st_dev;
    *inode = (unsigned long long)info.st_ino;
    return (int)(info.st_mode & S_IFMT);
}

/* A descriptor of `name` in `folder` if it is still the file identified,
 * or -1 (ESTALE when another file has its name). */
static int open_identified(int folder, const char *name, unsigned long long device, unsigned long long inode) {
    int handle = openat(folder, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (handle < 0) return -1;
    struct stat info;
    if (fstat(handle, &info) != 0) {
        int saved = errno;
        close(handle);
        errno = saved;
        return -1;
    }
    if ((unsigned long long)info.st_dev != device || (unsigned long long)info.st_ino != inode || S_ISLNK(info.st_mode)) {
        close(handle);
        errno = ESTALE;
        return -1;
    }
    return handle;
}

int xcallback_chmod_identified_at(int folder, const char *name, unsigned long long device,
                                  unsigned long long inode, unsigned int mode) {
    int handle = open_identified(folder, name, device, inode);
    if (handle < 0) return -1;
    /* /proc's link to the descriptor reaches the inode it holds (a socket
       cannot be opened for fchmod). */
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", handle);
    int result = chmod(link, (mode_t)mode);
    int saved = errno;
    close(handle);
    errno = saved;
    return result;
}

int xcallback_unlink_identified_at(int folder, const char *name, unsigned long long device,
                                   unsigned long long inode) {
    int handle = open_identified(folder, name, device, inode);
    if (handle < 0) return -1;
    close(handle);
    /* Between the check and the unlink the name could change again: only
       by someone who may write the folder, who could remove it anyway. */
    return unlinkat(folder, name, 0);
}
