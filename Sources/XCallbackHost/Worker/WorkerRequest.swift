import XCallbackBridge

/// A request on its way to a plug-in's worker by the general path, one
/// shape from the line it waits in (`WaitingLine`) to the worker that runs
/// it (`WorkerProcess`), and on to the next worker if that one never began
/// it.
struct WorkerRequest: Sendable {
    /// The route's handler in the plug-in.
    var handler: Int
    var request: RequestFields
    /// Where its result goes, exactly once.
    var call: HandlerCall
    /// The worker said the handler returned (its completion may still come later).
    var returned = false
}
