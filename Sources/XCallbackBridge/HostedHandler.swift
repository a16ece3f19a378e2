import XCallbackURL

/// A handler the host runs itself rather than calling into native code: a
/// function of a WebAssembly module, run by the runtime of the format that
/// loaded it (``PluginFormat``). It answers before it returns, like a bound
/// function, on the calling thread; several may run at once.
public protocol HostedHandler: AnyObject, Sendable {
    /// Runs the handler for `request`, matched by the route `route`, and
    /// returns its result; nil when the call was cut short with no result
    /// of its own (its time budget spent): the dispatcher's deadline then
    /// answers `Timeout`, as for any handler that does not answer in time.
    func call(_ request: RequestFields, route: String) -> HandlerResult?
}
