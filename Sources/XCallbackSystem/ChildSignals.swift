#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Signal state for a process the host starts. The host blocks its signals
/// on every thread but one and ignores SIGPIPE; a child inherits both
/// through `posix_spawn` unless told otherwise, and would then neither stop
/// on SIGTERM nor die on a broken pipe. Each child also gets a process
/// group of its own: a terminal's Ctrl-C is the host's to handle, and the
/// host stops its children itself. A worker (or the zygote) gets a session
/// of its own as well: without a controlling terminal it cannot open
/// `/dev/tty`, take the terminal's foreground or stop its output.
public enum ChildSignals {
    /// Runs `body` with spawn attributes that start the child with no signal
    /// blocked and each of `defaults` at its default action; in a session of
    /// its own when `newSession`.
    public static func withSpawnAttributes<R>(resetting defaults: [Int32], newSession: Bool = false,
                                       _ body: (inout posix_spawnattr_t) -> R) -> R {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var reset = sigset_t()
        sigemptyset(&reset)
        // The host ignores SIGIO and SIGURG (`Host.init`); its children
        // start with them at their defaults, as they would anywhere else.
        for signal in defaults + [SIGIO, SIGURG] { sigaddset(&reset, signal) }
        posix_spawnattr_setsigdefault(&attributes, &reset)
        posix_spawnattr_setpgroup(&attributes, 0)
        // POSIX_SPAWN_SETSID (glibc 2.26) makes the group too.
        let group = newSession ? Int32(0x80) : Int32(POSIX_SPAWN_SETPGROUP)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | group))
        return body(&attributes)
    }
}
