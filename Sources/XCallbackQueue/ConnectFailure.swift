#if Queue  // the package's Queue trait: swift build --traits Queue
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// A connection to the queue's database that could not be opened, said for
/// a person: what was tried (the socket path, or host and port; the user
/// and the database), what went wrong, and what to check. SwiftNIO's own
/// words (`SingleConnectionFailure(…) (errno: 111)`) stay out of it.
struct ConnectFailure: Error, Sendable, CustomStringConvertible {
    let location: QueueLocation
    let underlying: any Error
    /// How long it was tried (`--wait-for-database`); zero while still
    /// trying. Either way the failure says nothing of waiting for it.
    var waited: Duration?

    var description: String {
        let (what, hint) = explanation
        return "cannot connect to PostgreSQL \(target) as user \(location.user), database \(location.database): \(what)"
            + (waited.flatMap { $0 > .zero ? " (tried for \($0.spoken))" : nil } ?? "") + (hint.isEmpty ? "" : ". \(hint)")
    }

    /// Whether trying again later may succeed: the server is not there
    /// yet, or is starting, or is full; not a refused login or a missing
    /// database, which only a person can fix.
    var mayPass: Bool {
        switch cause {
        case .server(let state, _): return state == "57P03" || state == "53300" || state.hasPrefix("08")
        case .setup: return false
        case .system, .timeout, .name, .closed, .other: return true
        }
    }

    private var target: String {
        location.usesUnixSocket ? "on the Unix socket \(location.socketPath)"
            : "on host \(location.host), port \(location.port),"
    }

    private enum Cause {
        case system(Int32)
        case timeout
        /// The host name has no address, with the C library's reason
        /// (`gai_strerror`'s, as libpq gives it) when known: SwiftNIO's own
        /// words for it (`SocketAddressError.UnknownHost: …`) stay out.
        case name(String?)
        case server(state: String, message: String)
        /// The client's own settings do not fit the server's.
        case setup(String)
        case closed
        case other(String)
    }

    private var cause: Cause {
        var error = underlying
        if let psql = error as? PSQLError {
            if let info = psql.serverInfo {
                return .server(state: info[.sqlState] ?? "", message: info[.message] ?? "error")
            }
            switch psql.code {
            case .sslUnsupported: return .setup("the server does not support TLS, which sslmode asks for")
            case .authMechanismRequiresPassword:
                return .setup("the server asks for a password and none was given (PGPASSWORD, ~/.pgpass, or the URL)"
                              + (location.passwordFileProblem.map { "; \($0), so it was not read" } ?? ""))
            case .unsupportedAuthMechanism: return .setup("the server asks for a login method this client does not support")
            case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown: return .closed
            default: break
            }
            guard let inner = psql.underlying else { return .other("connection error (\(psql.code))") }
            error = inner
        }
        if let failure = error as? NIOConnectionError {
            if let dns = failure.dnsAError ?? failure.dnsAAAAError {
                return .name((dns as? SocketAddressError.UnknownHost)?.errorDescription)
            }
            // The last address tried says why; every one failed.
            if let last = failure.connectionErrors.last { error = last.error } else { return .name(nil) }
        }
        if let io = error as? IOError { return .system(io.errnoCode) }
        if let channel = error as? ChannelError, case .connectTimeout = channel { return .timeout }
        if let unknown = error as? SocketAddressError.UnknownHost { return .name(unknown.errorDescription) }
        if error is SocketAddressError { return .name(nil) }
        return .other(QueueError.describe(error))
    }

    private var explanation: (what: String, hint: String) {
        let running = location.usesUnixSocket
            ? "Check that the server is running and that the URL's host (the socket folder) and port are its unix_socket_directories and port"
            : "Check that the server is running, listens on TCP at that address (listen_addresses, port), and that the URL's host and port are right"
        let waiting = waited == nil ? "; a host started before its database can wait for it with --wait-for-database SECONDS" : ""
        switch cause {
        case .system(let code):
            let text = String(cString: strerror(code))
            switch code {
            case ENOENT: return ("no such socket file, so no server is listening there (\(text))", running + waiting)
            case ECONNREFUSED:
                return (location.usesUnixSocket ? "no server accepts on that socket (\(text))" : "the connection was refused (\(text))",
                        running + waiting)
            case EACCES, EPERM:
                return ("permission denied (\(text))", "Check that this user may enter the socket folder and write to the socket")
            case EHOSTUNREACH, ENETUNREACH, ETIMEDOUT:
                return ("the host cannot be reached (\(text))", "Check the host name or address, the network and any firewall between")
            default:
                return (text, running)
            }
        case .timeout:
            return ("no answer within 10 s", "Check the host name or address, the port, and any firewall between")
        case .name(let reason):
            return ("the host name \(location.host) cannot be translated to an address" + (reason.map { ": \($0)" } ?? ""),
                    "Check the URL's host (or PGHOST) for a typing mistake, and the name service (/etc/hosts, DNS)")
        case .server(let state, let message):
            let said = "the server said: \(message) (SQLSTATE \(state))"
            switch state {
            case "28P01", "28000":
                return (said, "Check the user, its password (PGPASSWORD, ~/.pgpass, or the URL) and the server's pg_hba.conf")
            case "3D000":
                return (said, "Create the database (createdb \(location.database)) and then the queue (xcallback queue init)")
            case "57P03":
                return (said, "The server is starting or stopping: try again in a moment" + waiting)
            case "53300":
                return (said, "The server's max_connections is reached (each host holds four)")
            default:
                return (said, "")
            }
        case .setup(let text):
            return (text, "")
        case .closed:
            return ("the server closed the connection during the login", running)
        case .other(let text):
            return (text, running)
        }
    }
}
#endif
