import CSandbox
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's end of one worker's seccomp filter: every call the filter
/// does not simply allow waits in the kernel until this answers it.
///
/// A call that is merely not granted (a socket without `network`, say) is
/// failed with its errno and reported once per kind; a dangerous one is
/// recorded, by name, and ends the worker's whole process group before the
/// call could return. The answer comes from the host, not from a signal
/// handler in the worker, so nothing the plug-in does to its own signals or
/// memory can hide a call or change its answer.
public final class SandboxSupervisor: Sendable {
    private struct State {
        var violation: String?
        var onDenied: (@Sendable (DeniedCalls) -> Void)?
        var denied: DeniedCalls = []
    }

    private let channel: Int32
    private let endGroup: @Sendable () -> Void
    private let state = Mutex(State())

    /// `channel` is the host's end of the socket the worker sends its
    /// filter's listener on; `endGroup` kills the worker's process group
    /// (through its pidfd where the host has one, never a reusable number).
    public init(channel: Int32, endGroup: @escaping @Sendable () -> Void) {
        self.channel = channel
        self.endGroup = endGroup
    }

    /// The dangerous system call that ended the worker, if one did.
    public var violation: String? { state.withLock { $0.violation } }

    /// Calls `handler` with each kind of denied call the first time this
    /// worker tries it (and at once with any tried before).
    public func onDenied(_ handler: @escaping @Sendable (DeniedCalls) -> Void) {
        let earlier = state.withLock { state -> DeniedCalls in
            state.onDenied = handler
            return state.denied
        }
        if !earlier.isEmpty { handler(earlier) }
    }

    /// Answers the worker's calls until it and everything it started are
    /// gone. Blocks: run it on a thread of its own.
    public func serve() {
        let listener = xcallback_seccomp_receive_listener(channel)
        close(channel)
        guard listener >= 0 else { return }
        defer { close(listener) }
        var pace = DeniedCallPace(now: DeniedCallPace.now)
        while true {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, -1)
            if polled < 0 {
                if errno == EINTR { continue }
                return
            }
            // Every process under the filter has exited.
            if ready.revents & Int16(POLLIN) == 0 { return }
            var call = xcallback_supervised_call()
            guard xcallback_seccomp_next_call(listener, &call) == 0 else {
                if errno == ENOENT || errno == EINTR { continue }  // its process died meanwhile
                return
            }
            if call.denied_kind != 0 {
                // A flood is slowed: the caller waits for its answer.
                let wait = pace.delay(now: DeniedCallPace.now)
                if wait > 0 { DeniedCallPace.sleep(wait) }
                _ = xcallback_seccomp_answer(listener, &call)
                report(DeniedCalls(rawValue: call.denied_kind))
            } else {
                // Recorded before the kill, so whoever sees the worker gone
                // finds the reason.
                state.withLock { $0.violation = $0.violation ?? SystemCallName.of(call.number) }
                endGroup()
                _ = xcallback_seccomp_answer(listener, &call)
            }
        }
    }

    private func report(_ kind: DeniedCalls) {
        let handler = state.withLock { state -> (@Sendable (DeniedCalls) -> Void)? in
            guard !state.denied.contains(kind) else { return nil }
            state.denied.formUnion(kind)
            return state.onDenied
        }
        handler?(kind)
    }
}
