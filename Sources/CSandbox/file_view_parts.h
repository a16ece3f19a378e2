#ifndef XCALLBACK_FILE_VIEW_PARTS_H
#define XCALLBACK_FILE_VIEW_PARTS_H

/* The pieces file_view.c and view_template.c share: how an entry's source
 * is found, how a mount point is made beneath a root without a symlink on
 * the way, and how a failed step is named. Private to CSandbox. */

#include "sandbox.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* mount_setattr (Linux 5.12), spelled out: Debian's headers predate it. */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
enum {
    XCALLBACK_MOUNT_RDONLY = 0x1,
    XCALLBACK_MOUNT_NOSUID = 0x2,
    XCALLBACK_MOUNT_NODEV = 0x4,
    XCALLBACK_MOUNT_NOEXEC = 0x8,
    XCALLBACK_AT_EMPTY_PATH = 0x1000,
    XCALLBACK_AT_RECURSIVE = 0x8000,
};

/* Sets and clears attributes of the mount at `path` beneath `directory`
 * (the mount `directory` is, with XCALLBACK_AT_EMPTY_PATH and ""), and of
 * every mount beneath it with XCALLBACK_AT_RECURSIVE: one call for a whole
 * tree. `propagation` 0 leaves it as it is. -1 with ENOSYS before 5.12. */
int xcallback_view_set_attributes(int directory, const char *path, unsigned flags, uint64_t set, uint64_t clear,
                                  uint64_t propagation);

/* Opens the bind or clone `mount` (a descriptor of its root) again for
 * what its entry's `kind` needs once everything was made read-only,
 * no-suid and no-dev: writing, and for a device no-dev cleared; at its
 * top only, so a read-only mount beneath stays so. Nothing for a read. */
int xcallback_view_open_for(int mount, int kind);

/* Where a failed step is named for the caller's message. */
typedef struct {
    char *text;
    unsigned long size;
} xcallback_failure_note;

int xcallback_view_fail(xcallback_failure_note *note, const char *step, const char *path);

/* Where an entry comes from, looked up while the host's root is still the
 * root: the path with every symlink resolved, or for a symlink that is not
 * followed, its own text (made again in the view). */
typedef struct {
    char link[PATH_MAX];
    int source;  /* O_PATH descriptor of what the entry names, or -1 */
    int mounted; /* O_PATH descriptor of its bind in the view, or -1 */
    int is_link;
    int present;
    int refused; /* a granted path with a symlink in it */
} xcallback_resolved_entry;

void xcallback_view_resolve(const xcallback_view_entry *entry, xcallback_resolved_entry *out);

/* Opens the folder that will hold `path` beneath `root`, making each folder
 * on the way and never passing a symlink; copies the last component into
 * `last`. */
int xcallback_view_open_parent(int root, const char *path, char *last, size_t last_size);

/* Makes the mount point of `path` in `parent` (named `last` there): a
 * folder or an empty file, as the entry's source is, or the entry's own
 * symlink. Leaves the mount point in `point`, opened O_PATH without
 * following a symlink (-1 for a symlink entry: nothing to mount). Returns
 * 0, or -1 with `note` set. */
int xcallback_view_make_point(xcallback_failure_note *note, int parent, const char *last, const char *path,
                              const xcallback_resolved_entry *resolved, int *point);

/* Opens the mount point `last` in `parent` O_PATH, never a symlink (-1,
 * ELOOP if it is one). */
int xcallback_view_open_point(int parent, const char *last);

/* Sorts entries by path: parents before children. */
int xcallback_view_compare_entries(const void *left, const void *right);

/* "/proc/self/fd/N": a descriptor as a path mount(2) follows to its file. */
void xcallback_view_descriptor_path(char *buffer, size_t size, int descriptor);

/* The scratch tmpfs's inode ceiling for `bytes` of size. */
uint64_t xcallback_view_scratch_inodes(uint64_t bytes);

/* The scratch tmpfs's options: its size bounds its bytes, nr_inodes its files. */
void xcallback_view_scratch_options(char *buffer, size_t size, uint64_t bytes, uint32_t owner, uint32_t group);

/* Builds the whole view in the calling process's own mount namespace
 * (file_view.c): binds every entry into a new tmpfs root, pivots into it
 * and detaches the host's root. Without `scratch` (NULL), no scratch
 * tmpfs; with `writable_root`, it gets a descriptor of the root tmpfs's
 * first mount, which stays writable (the template's). */
int xcallback_view_build_whole(const xcallback_view_entry *entries, int count, const char *scratch,
                               uint64_t scratch_bytes, uint32_t owner, uint32_t group, xcallback_failure_note *note,
                               int *writable_root);

/* view_template.c: building a worker's view from the template, when
 * xcallback_view_template_usable (the contract of xcallback_build_view). */
int xcallback_view_build_from_template(const xcallback_view_entry *entries, int count, const char *scratch,
                                       uint64_t scratch_bytes, uint32_t owner, uint32_t group,
                                       xcallback_failure_note *note);

#endif
