#if Queue  // the package's Queue trait: swift build --traits Queue
import PostgresNIO

/// What went wrong with the queue, in words for the person at the terminal.
/// No message ever carries the password.
public struct QueueError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// The connection was lost or could not be opened for a while (a
    /// restart, a terminated backend), not refused: trying again later may
    /// work. `outcomes --follow` does, within `--wait-for-database`.
    public let connectionLost: Bool
    public init(_ message: String, connectionLost: Bool = false) {
        self.message = message
        self.connectionLost = connectionLost
    }
    public var description: String { message }

    /// A database error in a sentence: the server's own message and SQLSTATE
    /// when the server spoke, else what broke the connection.
    static func describe(_ error: any Error) -> String {
        if let error = error as? QueueError { return error.message }
        if let error = error as? ConnectFailure { return error.description }
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.commitError ?? error.beginError { return describe(inner) }
        }
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let message = info[.message] ?? "error"
                let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return "the server said: \(message)\(state)"
            }
            switch error.code {
            case .serverClosedConnection: return "the server closed the connection"
            case .clientClosedConnection: return "the connection was closed"
            case .sslUnsupported: return "the server does not support TLS, which sslmode asks for"
            case .authMechanismRequiresPassword: return "the server asks for a password and none was given (PGPASSWORD, ~/.pgpass, or the URL)"
            case .unsupportedAuthMechanism: return "the server asks for a login method this client does not support"
            default:
                if let underlying = error.underlying { return "\(underlying)" }
                return "connection error (\(error.code))"
            }
        }
        return "\(error)"
    }

    /// Whether the server refused for want of a privilege (SQLSTATE 42501).
    static func isPermissionDenied(_ error: any Error) -> Bool {
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.commitError ?? error.beginError { return isPermissionDenied(inner) }
        }
        return (error as? PSQLError)?.serverInfo?[.sqlState] == "42501"
    }

    /// Whether the error says nothing about the statement itself, only
    /// about the connection: then it may have committed or not, and the
    /// caller checks before doing it again.
    static func isConnectionLoss(_ error: any Error) -> Bool {
        if error is ConnectFailure { return true }
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.commitError ?? error.beginError { return isConnectionLoss(inner) }
        }
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] {
            // 57P01 admin shutdown (pg_terminate_backend), 08 connection
            // exceptions, 53 out of resources, 57P0x server stopping.
            return state.hasPrefix("57P") || state.hasPrefix("08") || state.hasPrefix("53")
        }
        return error.code != .server
    }
}
#endif
