import CHostSupport
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Takes SIGINT, SIGTERM, SIGHUP and SIGUSR1 on one dedicated thread, so
/// the handling code is ordinary code, not async-signal-safe code. They stay
/// blocked in every thread, that one included: it reads them from a
/// signalfd. SIGUSR1's default action would otherwise kill the host.
///
/// Not sigwait: while a thread waits in sigwait, the kernel shows the
/// signals it waits for as unblocked (`SigBlk` in /proc/PID/task/TID/status).
/// The Swift runtime's crash handler stops each thread with the first of
/// SIGUSR1, SIGUSR2 and SIGPROF it finds unblocked there, so it sent that
/// thread SIGUSR1: sigwait took it as a request for a summary, and the
/// thread never stopped, so the handler tried again, 16 times 2 s apart. A
/// crashed host printed its summary 16 times and lingered 32 s more.
package struct SignalWaiter: Sendable {
    /// Whether the first stop was SIGINT (Ctrl-C): `run` then exits 130,
    /// as an interrupted program does; after SIGTERM it exits 0.
    static var stoppedByInterrupt: Bool { interrupted.load(ordering: .acquiring) }
    fileprivate static let interrupted = Atomic<Bool>(false)

    /// Blocks the signals in the calling thread; threads created after this
    /// inherit the mask. Call before starting any thread.
    package static func blockHostSignals() -> SignalWaiter {
        let waiter = SignalWaiter()
        var set = waiter.signalSet
        pthread_sigmask(SIG_BLOCK, &set, nil)
        return waiter
    }

    /// For `run`, the signals are blocked before anything else runs, by the
    /// executable's .preinit_array (CHostSupport's early_signals.c says
    /// why); this is the fallback, first thing in `main`, where that did not
    /// run. Other commands keep the default actions.
    package static func blockEarly(for arguments: [String]) {
        guard xcallback_host_signals_blocked_early() == 0, arguments.first == "run" else { return }
        _ = blockHostSignals()
    }

    private var signalSet: sigset_t {
        var set = sigset_t()
        xcallback_host_signal_set(&set)
        return set
    }

    /// Starts the thread: SIGINT/SIGTERM call `onStop` (a second one exits
    /// at once), SIGHUP `onReload`, SIGUSR1 `onReport`.
    package func start(onStop: @escaping @Sendable () -> Void, onReload: @escaping @Sendable () -> Void,
               onReport: @escaping @Sendable () -> Void) {
        var set = signalSet
        let descriptor = xcallback_signal_descriptor(&set)
        guard descriptor >= 0 else {
            // Linux has had signalfd since 2.6.22; without it the signals
            // stay blocked, and a stop needs SIGKILL.
            Diagnostics.logger.error("cannot take signals: signalfd: \(String(cString: strerror(errno)))")
            return
        }
        let thread = SignalThread(descriptor: descriptor, onStop: onStop, onReload: onReload, onReport: onReport)
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
    let descriptor: Int32
    let onStop: @Sendable () -> Void
    let onReload: @Sendable () -> Void
    let onReport: @Sendable () -> Void

    init(descriptor: Int32, onStop: @escaping @Sendable () -> Void, onReload: @escaping @Sendable () -> Void,
         onReport: @escaping @Sendable () -> Void) {
        self.descriptor = descriptor
        self.onStop = onStop
        self.onReload = onReload
        self.onReport = onReport
    }

    func run() {
        var stops = 0
        while true {
            let received = xcallback_read_signal(descriptor)
            guard received > 0 else { return }  // the descriptor failed: not for a blocking read
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
