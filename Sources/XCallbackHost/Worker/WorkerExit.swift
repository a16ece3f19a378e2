import CHostSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a worker process ended, in words for `errorMessage`.
struct WorkerExit: Sendable, Equatable, CustomStringConvertible {
    /// The raw `waitpid` status.
    let status: Int32

    var signal: Int32? { status & 0x7F != 0 && status & 0x7F != 0x7F ? status & 0x7F : nil }
    var exitCode: Int32? { signal == nil ? (status >> 8) & 0xFF : nil }

    var description: String {
        if let signal { return "was killed by signal \(signal) (\(PluginProbe.signalName(signal)))" }
        return "exited with status \(exitCode ?? -1)"
    }

    /// Reaps `pid` once it exits by itself within `grace` milliseconds
    /// (its socket closing usually means it is exiting); kills it if not.
    static func reap(_ pid: pid_t, grace: Int32) -> WorkerExit {
        let exitEvent = xcallback_pidfd_open(pid)
        if exitEvent >= 0 {
            var event = pollfd(fd: exitEvent, events: Int16(POLLIN), revents: 0)
            while poll(&event, 1, grace) < 0 && errno == EINTR {}
            close(exitEvent)
        }
        // Whatever the plug-in started is still in the worker's process
        // group (its sandbox refuses setsid and setpgid), and the group
        // outlives its leader only until the leader is reaped: end them all
        // now, so nothing a plug-in forked outlives its worker or holds the
        // host's pipes.
        kill(-pid, SIGKILL)
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { return WorkerExit(status: status) }
        kill(pid, SIGKILL)
        return wait(for: pid)
    }

    /// Reaps `pid`, retrying on EINTR.
    static func wait(for pid: pid_t) -> WorkerExit {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return WorkerExit(status: 0) }
        }
        return WorkerExit(status: status)
    }
}
