/// A plug-in that races the host's clean-up of its scratch folder (issue
/// 41): once armed, each new worker of it swaps a folder and a link to an
/// outside folder inside its scratch folder, as fast as it can, from its
/// constructor, and so never finishes starting. Built by the tests with
/// `cc`; `@OUTSIDE@` is the folder the link names.
enum ScratchRacePlugin {
    static let name = "swapper"

    static func source(outside: String) -> String {
        template.replacingOccurrences(of: "@OUTSIDE@", with: outside)
    }

    private static let template = #"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xcallback.h"

XCALLBACK_PLUGIN("swapper", "1.0.0", "Races the host's clean-up of its scratch folder")

static const xcallback_host_api *host;

static void make_file(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
}

/* In a worker whose scratch folder (TMPDIR: constructors run before the
 * worker enters it) holds `armed`: a nested folder `dir` and a link `swap`
 * to the outside folder trade places, forever. The host must not remove
 * the folder until this worker is gone, and then must not follow the
 * link. */
__attribute__((constructor)) static void race(void) {
    const char *scratch = getenv("TMPDIR");
    if (scratch == NULL || chdir(scratch) != 0 || access("armed", F_OK) != 0) return;
    mkdir("dir", 0700);
    mkdir("dir/a", 0700);
    mkdir("dir/a/b", 0700);
    char name[64];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "dir/file-%d", i);
        make_file(name);
        snprintf(name, sizeof name, "dir/a/b/file-%d", i);
        make_file(name);
    }
    symlink("@OUTSIDE@", "swap");
    static const char line[] = "swapping\n";
    (void)!write(2, line, sizeof line - 1);
    for (;;) renameat2(AT_FDCWD, "dir", AT_FDCWD, "swap", RENAME_EXCHANGE);
}

/* arm: marks the scratch folder, then the worker dies; the host restarts
 * it, and the new worker races from its constructor. */
static void arm(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)reply; (void)unused;
    make_file("armed");
    raise(SIGKILL);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    host = api;
    return api->register_action(plugin, "swap", "arm", arm, NULL);
}
"""#
}
