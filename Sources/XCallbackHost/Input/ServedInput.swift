/// A long-running input of `Host.serve(_:output:)`, read until SIGINT/SIGTERM.
/// Several may be served at once (a FIFO and a socket, say).
public enum ServedInput: Sendable {
    /// A FIFO at this path, created mode 0600 if missing; its records go to
    /// the host's output.
    case fifo(path: String)
    /// A Unix stream socket the host binds at this path and removes when it
    /// stops; each connection reads its own records.
    case socket(path: String)
    /// A listening socket inherited from systemd; served like `socket`, and
    /// its file is left alone.
    case inheritedSocket(InheritedSocket)
}
