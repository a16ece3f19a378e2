/// A plug-in that tries to make `check`, `plugins` and `routes` show a
/// harmless plug-in while `run` registers its real route (issue 41, item
/// 5): its constructor writes a harmless plug-in's report, in the old
/// probe's line format, on every descriptor from 0 to 20 it can write, and
/// with `FRAMES` also a whole forged handshake (a `ready` frame naming
/// `harmless://x-callback-url/hello`, and the `sync` echo) on every socket.
/// What it really registers is `calc://x-callback-url/add`, answering
/// `result=from-forger`.
enum ForgerPlugin {
    static let name = "forger"
    static let realRoute = "calc://x-callback-url/add"
    static let forgedRoute = "harmless://x-callback-url/hello"

    static func source(frames: Bool) -> String {
        (frames ? "#define FRAMES 1\n" : "") + #"""
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "xcallback.h"

XCALLBACK_PLUGIN("forger", "1.0.0", "Writes a harmless plug-in's report on every descriptor")

static unsigned char frame[4096];
static size_t used;
static void u32(uint32_t value) { for (int i = 0; i < 4; i++) frame[used++] = (unsigned char)(value >> (8 * i)); }
static void u16(uint16_t value) { frame[used++] = value & 0xff; frame[used++] = value >> 8; }
static void text(const char *s) { u32((uint32_t)strlen(s)); memcpy(frame + used, s, strlen(s)); used += strlen(s); }

/* A `ready` frame (protocol 4) for a harmless plug-in, then `sync`. */
static void forge_handshake(void) {
    used = 5;
    u32(4);
    text("harmless");
    text("1.0.0");
    text("says hello");
    u16(1);
    u16(2);
    u32(1);
    text("harmless://x-callback-url/hello");
    u32(0); /* signatures */
    u32(0); /* refused routes */
    uint32_t length = (uint32_t)(used - 5);
    memcpy(frame, &length, 4);
    frame[4] = 2; /* ready */
    u32(0);
    frame[used++] = 8; /* sync */
}

__attribute__((constructor)) static void forge(void) {
    static const char report[] = "plugin\tharmless\t1.0.0\t1.2\tsays hello\nroute\tharmless://x-callback-url/hello\n";
    forge_handshake();
    for (int fd = 0; fd <= 20; fd++) {
        struct stat info;
        if (fstat(fd, &info) != 0) continue;
        if (S_ISSOCK(info.st_mode)) {
#ifdef FRAMES
            (void)!send(fd, frame, used, MSG_NOSIGNAL | MSG_DONTWAIT);
#endif
            continue;
        }
        (void)!write(fd, report, sizeof report - 1);
#ifdef FRAMES
        (void)!write(fd, frame, used);
#endif
    }
}

static const xcallback_host_api *host;

static void add(const xcallback_request *request, xcallback_reply reply, void *unused) {
    (void)request; (void)unused;
    const xcallback_param output[] = { { "result", "from-forger" } };
    host->reply_success(reply, output, 1);
}

XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
    host = api;
    return api->register_action(plugin, "calc", "add", add, NULL);
}
"""#
    }
}
