import Synchronization
import XCallbackBridge
import XCallbackMetrics
import XCallbackSystem

/// Something that runs a plug-in's handlers: the plug-in loaded into this
/// process, or a worker process that loaded it.
protocol PluginEndpoint: AnyObject, Sendable {
    var pluginName: String { get }
    /// The plug-in's counts (`run --metrics`; nil when off), found once
    /// when it was loaded, so that no request looks them up by name.
    var counts: PluginMetrics? { get }

    /// Runs handler `index` for `request`. `call.deliver` receives the
    /// result exactly once, on any thread, before or after this returns.
    func invoke(handler index: Int, request: RequestFields, call: HandlerCall)

    /// True when the endpoint always completes its requests itself, by
    /// deadlines of its own (the built-in `await`): the dispatcher then does
    /// not apply `--timeout`.
    var keepsOwnDeadlines: Bool { get }

    /// Why the endpoint turns requests away now (quarantined, disabled,
    /// retired), as the `PluginUnavailable` message says it; nil when it
    /// takes them.
    var unavailableReason: String? { get }
}

extension PluginEndpoint {
    var keepsOwnDeadlines: Bool { false }
    var unavailableReason: String? { nil }
}

/// One attempt at a request by one handler. The dispatcher hands it to an
/// endpoint; the endpoint reports the result and, for deadlines, how to
/// retire the attempt if the host gives up on it first.
final class HandlerCall: Sendable {
    let deliver: @Sendable (HandlerResult) -> Void
    private let abandonment = Lock(Abandonment.open(nil))
    /// A worker died with this call the oldest in flight, saying it had
    /// begun none of them (`mayRunAfterCrash`).
    private let survivedACrash = Atomic<Bool>(false)

    private enum Abandonment {
        /// Still running, with what to do if the host gives up on it.
        case open((@Sendable () -> Void)?)
        case abandoned
    }

    init(deliver: @escaping @Sendable (HandlerResult) -> Void) {
        self.deliver = deliver
    }

    /// Set by the endpoint: what to do when the host answers `Timeout`.
    /// Returns false, keeping nothing, if the host already did (the call
    /// timed out before the endpoint could start it).
    @discardableResult
    func whenAbandoned(_ action: @escaping @Sendable () -> Void) -> Bool {
        abandonment.withLock { state in
            guard case .open = state else { return false }
            state = .open(action)
            return true
        }
    }

    /// A worker died with this call the oldest in flight, saying it had
    /// begun none of them: whether it may go to the next worker. Once only.
    /// The "none begun" is the dead worker's word (its shared page), and a
    /// worker that lied would have the request it was running run again and
    /// again; the second time, it is taken for begun (`PluginCrashed`).
    func mayRunAfterCrash() -> Bool {
        !survivedACrash.exchange(true, ordering: .relaxed)
    }

    /// Called by the dispatcher after it answered `Timeout` for this attempt.
    func abandon() {
        let action = abandonment.withLock { state -> (@Sendable () -> Void)? in
            defer { state = .abandoned }
            guard case .open(let action) = state else { return nil }
            return action
        }
        action?()
    }
}

