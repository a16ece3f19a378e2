import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Takes SIGINT, SIGTERM, SIGHUP and SIGUSR1 on one dedicated thread
/// (sigwait), so the handling code is ordinary code, not async-signal-safe
/// code. Blocked in every other thread: SIGUSR1's default action would
/// otherwise kill the host.
struct SignalWaiter: Sendable {
    private let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGUSR1]

    /// Whether the first stop was SIGINT (Ctrl-C): `run` then exits 130,
    /// as an interrupted program does; after SIGTERM it exits 0.
    static var stoppedByInterrupt: Bool { interrupted.load(ordering: .acquiring) }
    fileprivate static let interrupted = Atomic<Bool>(false)

    /// Blocks the signals in the calling thread; threads created after this
    /// inherit the mask. Call before starting any thread.
    static func blockHostSignals() -> SignalWaiter {
        let waiter = SignalWaiter()
        var set = waiter.signalSet
        pthread_sigmask(SIG_BLOCK, &set, nil)
        return waiter
    }

    private var signalSet: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }

    /// Starts the thread: SIGINT/SIGTERM call `onStop` (a second one exits
    /// at once), SIGHUP `onReload`, SIGUSR1 `onReport`.
    func start(onStop: @escaping @Sendable () -> Void, onReload: @escaping @Sendable () -> Void,
               onReport: @escaping @Sendable () -> Void) {
        let set = signalSet
        let thread = SignalThread(set: set, onStop: onStop, onReload: onReload, onReport: onReport)
        var handle = pthread_t()
        let box = Unmanaged.passRetained(thread).toOpaque()
        pthread_create(&handle, nil, { raw in
            let thread = Unmanaged<SignalThread>.fromOpaque(raw!).takeRetainedValue()
            thread.run()
            return nil
        }, box)
        pthread_detach(handle)
    }
}

private final class SignalThread: @unchecked Sendable {
    var set: sigset_t
    let onStop: @Sendable () -> Void
    let onReload: @Sendable () -> Void
    let onReport: @Sendable () -> Void

    init(set: sigset_t, onStop: @escaping @Sendable () -> Void, onReload: @escaping @Sendable () -> Void,
         onReport: @escaping @Sendable () -> Void) {
        self.set = set
        self.onStop = onStop
        self.onReload = onReload
        self.onReport = onReport
    }

    func run() {
        var stops = 0
        while true {
            var received: Int32 = 0
            guard sigwait(&set, &received) == 0 else { continue }
            if received == SIGHUP {
                onReload()
            } else if received == SIGUSR1 {
                onReport()
            } else {
                stops += 1
                // A second SIGINT/SIGTERM means "now": skip the grace period.
                if stops > 1 { _exit(130) }
                if received == SIGINT { SignalWaiter.interrupted.store(true, ordering: .releasing) }
                onStop()
            }
        }
    }
}
