import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Calls `onChange` soon after a file in one of the directories is
/// finished (closed after writing), renamed in or out, removed, or has its
/// permissions changed. Linux inotify, with a periodic rescan when inotify
/// is unavailable or a directory cannot be watched. Events are coalesced:
/// one call per burst, so a `cp` and `mv` pair costs one rescan.
public final class DirectoryWatcher: Sendable {
    public let directories: [String]
    private let stop: StopSignal
    private let logger: Logger
    /// The inotify descriptor, or -1 when inotify is unavailable.
    private let inotify: Int32
    /// False when some directory could not be watched: rescan periodically.
    private let watchesAll: Bool
    /// How long a burst of events may run before the rescan.
    public static let settle: Int32 = 100
    /// Rescan period when inotify cannot watch every directory.
    public static let fallbackPeriod: Int32 = 1000

    /// Watches the directories from now on: a change made after `init`
    /// returns is reported once `start` runs, however late the thread gets
    /// going. (The watches are not left to the thread, or a file dropped in
    /// between the host's start-up scan and the thread's first step would
    /// go unseen until the next change.)
    public init(directories: [String], stop: StopSignal, logger: Logger) {
        self.directories = directories
        self.stop = stop
        self.logger = logger
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        var watchesAll = inotify >= 0
        if inotify >= 0 {
            let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB
                              | IN_DELETE_SELF | IN_MOVE_SELF)
            for directory in directories where inotify_add_watch(inotify, directory, mask) < 0 {
                // A default folder that does not exist is not a problem: the
                // rescans find it if it appears.
                let missing = errno == ENOENT
                let message: Logger.Message = "cannot watch \(directory) (\(String(cString: strerror(errno)))); rescanning it every \(Self.fallbackPeriod) ms"
                if missing { logger.debug(message) } else { logger.warning(message) }
                watchesAll = false
            }
        } else {
            logger.warning("inotify is unavailable; rescanning plug-in directories every \(Self.fallbackPeriod) ms")
        }
        self.watchesAll = watchesAll
    }

    deinit {
        if inotify >= 0 { close(inotify) }
    }

    /// Reports changes on a thread of its own, until the stop signal.
    public func start(onChange: @escaping @Sendable () -> Void) {
        Threads.detach { [self] in run(onChange) }
    }

    private func run(_ onChange: @Sendable () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !stop.isRaised {
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, watchesAll ? -1 : Self.fallbackPeriod)
            if ready < 0 && errno != EINTR { return }
            if fds[1].revents != 0 { return }
            if inotify >= 0 && fds[0].revents != 0 {
                // Let the burst finish, then drain it: one rescan for all.
                var settle = pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&settle, 1, Self.settle)
                while read(inotify, &buffer, buffer.count) > 0 {}
                onChange()
            } else if !watchesAll {
                onChange()
            }
        }
    }
}
