import CHostSupport
import XCallbackBridge

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a worker process ended, in words for `errorMessage`.
struct WorkerExit: Sendable, Equatable, CustomStringConvertible {
    /// The raw `waitpid` status.
    let status: Int32
    /// Its peak resident memory, as the kernel counted it (`ru_maxrss`);
    /// nil where it was not had.
    var peakResidentKiB: Int? = nil

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
        var usage = rusage()
        if wait4(pid, &status, WNOHANG, &usage) == pid { return WorkerExit(status: status, peakResidentKiB: usage.ru_maxrss) }
        kill(pid, SIGKILL)
        return wait(for: pid)
    }

    /// Reaps `pid`, retrying on EINTR.
    static func wait(for pid: pid_t) -> WorkerExit {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            if errno != EINTR { return WorkerExit(status: 0) }
        }
        return WorkerExit(status: status, peakResidentKiB: usage.ru_maxrss)
    }
}

/// How the host reaches one worker process: as its own child (executed),
/// by pid; or through the pidfd of a worker the zygote forked, which names
/// the process itself, so no signal can reach a process that took a reaped
/// worker's pid.
struct WorkerParent: Sendable {
    /// nil: the worker is the host's child.
    let forked: ForkedWorker?
    /// Counts the worker among those that may write in a scratch folder
    /// until it is seen to end here (nil: it has no scratch folder).
    var writer: ScratchWriter? = nil

    /// The host's own child, with no scratch folder counted.
    static let host = WorkerParent(forked: nil)

    /// Whether the host must end the worker's process group itself when
    /// the worker exits: the zygote does it for the workers it forked.
    var endsGroupOnExit: Bool { forked != nil }

    /// Signals the worker.
    func signal(_ pid: pid_t, _ signal: Int32) {
        if let forked { forked.signal(signal) } else { kill(pid, signal) }
    }

    /// Signals the worker's process group (it leads one of its own).
    func signalGroup(_ pid: pid_t, _ signal: Int32) {
        if let forked { forked.signal(signal, group: true) } else { kill(-pid, signal) }
    }

    /// As `WorkerExit.reap`.
    func reap(_ pid: pid_t, grace: Int32) -> WorkerExit {
        guard let forked else { return seen(WorkerExit.reap(pid, grace: grace)) }
        forked.waitForExit(milliseconds: grace)
        signalGroup(pid, SIGKILL)
        signal(pid, SIGKILL)
        return exit(of: forked)
    }

    /// As `WorkerExit.wait(for:)`.
    func wait(for pid: pid_t) -> WorkerExit {
        guard let forked else { return seen(WorkerExit.wait(for: pid)) }
        return exit(of: forked)
    }

    /// Reaped by the host (its group ended first): it writes nothing more.
    private func seen(_ exit: WorkerExit) -> WorkerExit {
        writer?.ended()
        return exit
    }

    /// What the zygote reported (it ends the worker's group, then reaps
    /// it). A worker whose zygote died was killed with it
    /// (PR_SET_PDEATHSIG), and one it did not report in time (a stopped
    /// zygote) is taken for killed; either counts as ended only once its
    /// pidfd says it exited. Its pidfd is closed then: the worker is gone,
    /// or taken for gone.
    private func exit(of forked: ForkedWorker) -> WorkerExit {
        defer { forked.close() }
        if let exit = forked.zygote.exit(of: forked.serial) { return seen(exit) }
        // Its group, while its number is still its own (a zombie no one reaped).
        forked.signal(SIGKILL, group: true)
        forked.signal(SIGKILL)
        if forked.waitForExit(milliseconds: 1000) { writer?.ended() }
        return WorkerExit(status: SIGKILL)
    }
}
