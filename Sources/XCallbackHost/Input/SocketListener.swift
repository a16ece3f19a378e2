import CHostSupport
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `--socket PATH` input: a Unix stream socket. Each connection sends
/// request lines and receives its own records on the same connection; the
/// client signals the end of its requests by shutting down its write side.
final class SocketListener: Sendable {
    /// The socket file to remove when done: the one this host created; nil
    /// for a socket systemd passed, whose file systemd owns.
    let ownedPath: String?
    /// That file, held: restricted and removed as itself, never by a path a
    /// process that may write its folder could have changed meanwhile.
    private let ownedFile: BoundSocketFile?
    let descriptor: Int32
    /// Connections served at once; past it, a new one is told `Busy`.
    static let maxConnections = 256
    /// Connections one client process may hold at once: a client that opens
    /// hundreds and sends nothing must not lock everyone else out.
    static let maxConnectionsPerProcess = 64

    init(path: String) throws(HostSetupError) {
        self.ownedPath = path
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                throw HostSetupError("\(path) exists and is not a socket; refusing to replace it")
            }
            // A socket file left by a host that died: remove it only if no
            // one answers on it.
            if SocketClient.connect(path) != nil {
                throw HostSetupError("another host is already listening on \(path)")
            }
            BoundSocketFile.removeLeftover(at: path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HostSetupError("socket: \(String(cString: strerror(errno)))") }
        guard var address = SocketClient.address(path) else {
            close(fd)
            throw HostSetupError("socket path too long: \(path)")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw HostSetupError("cannot listen on \(path): \(message)")
        }
        guard let file = BoundSocketFile(path: path), file.restrict(to: 0o600) else {
            close(fd)
            throw HostSetupError("the socket file \(path) was replaced as it was made; not listening there")
        }
        ownedFile = file
        descriptor = fd
    }

    /// Serves a listening socket inherited from systemd (socket activation).
    init(inherited socket: InheritedSocket) {
        ownedPath = nil
        ownedFile = nil
        descriptor = socket.descriptor
    }

    /// Stops listening; removes the socket file if this host created it.
    func stopListening() {
        close(descriptor)
        ownedFile?.remove()
    }

    /// Accepts connections until `stop` is raised, serving each on its own
    /// thread with `serve`; returns when every connection has been served.
    /// Connections already waiting when the stop comes are still served
    /// (their lines are answered `ShuttingDown`), not dropped unanswered.
    /// A connection from another user is closed at once and reported to
    /// `refused` with its uid.
    /// Past `maxConnections` in all, or `maxConnectionsPerProcess` from one
    /// client process, a connection is handed to `busy` (which answers it
    /// and closes it) instead of waiting unanswered in the backlog.
    func acceptConnections(until stop: StopSignal, refused: @escaping @Sendable (uid_t?) -> Void,
                           busy: @escaping @Sendable (Int32, String) -> Void,
                           serve: @escaping @Sendable (Int32) -> Void) {
        let active = ConditionLock(ConnectionCount())
        var draining = false
        while true {
            var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)]
            // Once stopping, only connections already in the backlog.
            guard poll(&fds, draining ? 1 : 2, draining ? 0 : -1) >= 0 || errno == EINTR else { break }
            if !draining && fds[1].revents != 0 {
                draining = true
                continue
            }
            if draining && fds[0].revents == 0 { break }
            guard fds[0].revents != 0 else { continue }
            let connection = xcallback_accept_cloexec(descriptor)
            guard connection >= 0 else { continue }
            // The socket file is 0600, but a socket systemd passes, or one
            // reached before its mode was set, may let others connect.
            guard let peer = LocalPeer.uid(of: connection), LocalPeer.isTrusted(peer) else {
                refused(LocalPeer.uid(of: connection))
                close(connection)
                continue
            }
            let process = xcallback_peer_pid(connection)
            let refusal = active.withLock { count -> String? in
                if count.total >= Self.maxConnections {
                    return "the host serves \(Self.maxConnections) connections at once; try again shortly"
                }
                if count.byProcess[process, default: 0] >= Self.maxConnectionsPerProcess {
                    return "process \(process) already has \(Self.maxConnectionsPerProcess) connections open; close some first"
                }
                count.total += 1
                count.byProcess[process, default: 0] += 1
                return nil
            }
            if let refusal {
                busy(connection, refusal)
                continue
            }
            Threads.detach {
                serve(connection)
                active.withLock { count in
                    count.total -= 1
                    count.byProcess[process, default: 1] -= 1
                    if count.byProcess[process] == 0 { count.byProcess[process] = nil }
                }
                active.broadcast()
            }
        }
        stopListening()
        active.wait(until: { $0.total == 0 }) { _ in }
    }

    /// Connections being served, in all and per client process.
    private struct ConnectionCount {
        var total = 0
        var byProcess: [Int32: Int] = [:]
    }
}

/// The client side of the socket, shared by `xcallback call`.
public enum SocketClient {
    static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// A connected socket, or nil when no one listens at `path`.
    public static func connect(_ path: String) -> Int32? {
        guard var address = address(path) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
