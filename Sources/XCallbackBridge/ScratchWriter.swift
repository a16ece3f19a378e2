import CHostSupport
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One process (a worker, a probe) that may write in a scratch folder,
/// counted by `ScratchFolders` from before it starts until the host has
/// seen it end, so the folders are never removed under it.
///
/// "Seen to end" means reaped by the host, or reported reaped by the
/// zygote, after its process group was ended: not a deadline that passed.
public final class ScratchWriter: Sendable {
    private let folders: ScratchFolders
    /// The process's pidfd (a copy of the writer's own), -1 before it
    /// started; nil once it ended.
    private let process = Lock<Int32?>(-1)

    init(folders: ScratchFolders) {
        self.folders = folders
    }

    /// The process started: `pidfd` names it (the writer keeps a copy), so
    /// a stop that finds it still alive can end it, never another process
    /// that took its number.
    public func started(pidfd: Int32) {
        guard pidfd >= 0 else { return }
        let copy = fcntl(pidfd, F_DUPFD_CLOEXEC, 0)
        process.withLock { process in
            guard process == -1 else {
                if copy >= 0 { close(copy) }
                return
            }
            process = copy
        }
    }

    /// The host saw the process end (or it never started). Once is enough;
    /// later calls do nothing.
    public func ended() {
        let wasLive = process.withLock { process -> Bool in
            guard let descriptor = process else { return false }
            if descriptor >= 0 { close(descriptor) }
            process = nil
            return true
        }
        if wasLive { folders.writerEnded(self) }
    }

    /// Kills the process, if it started and has not been seen to end: its
    /// reaper then ends its group and calls `ended`.
    func end() {
        process.withLock { process in
            if let descriptor = process, descriptor >= 0 { _ = xcallback_pidfd_signal(descriptor, SIGKILL, 0) }
        }
    }
}
