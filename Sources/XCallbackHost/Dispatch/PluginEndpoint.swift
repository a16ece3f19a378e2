/// Something that runs a plug-in's handlers: the plug-in loaded into this
/// process, or a worker process that loaded it.
protocol PluginEndpoint: AnyObject, Sendable {
    var pluginName: String { get }

    /// Runs handler `index` for `request`. `call.deliver` receives the
    /// result exactly once, on any thread, before or after this returns.
    func invoke(handler index: Int, request: RequestFields, call: HandlerCall)
}

/// One attempt at a request by one handler. The dispatcher hands it to an
/// endpoint; the endpoint reports the result and, for deadlines, how to
/// retire the attempt if the host gives up on it first.
final class HandlerCall: Sendable {
    let deliver: @Sendable (HandlerResult) -> Void
    private let onAbandon = Synchronization.Mutex<(@Sendable () -> Void)?>(nil)

    init(deliver: @escaping @Sendable (HandlerResult) -> Void) {
        self.deliver = deliver
    }

    /// Set by the endpoint: what to do when the host answers `Timeout`.
    func whenAbandoned(_ action: @escaping @Sendable () -> Void) {
        onAbandon.withLock { $0 = action }
    }

    /// Called by the dispatcher after it answered `Timeout` for this attempt.
    func abandon() {
        let action = onAbandon.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }
}

import Synchronization
