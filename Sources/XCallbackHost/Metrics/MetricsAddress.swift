import CHostSupport
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where `run --metrics` listens and `top` connects: `HOST:PORT` (an IPv4
/// address or `localhost`) or a Unix socket path (anything with a `/`).
public enum MetricsAddress: Sendable, Equatable, CustomStringConvertible {
    case tcp(host: String, port: UInt16)
    case unix(path: String)

    public init(parsing text: String) throws(HostSetupError) {
        if text.contains("/") {
            self = .unix(path: text)
            return
        }
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw HostSetupError("metrics address '\(text)' is neither HOST:PORT (127.0.0.1:9464) nor a socket path (with a '/')")
        }
        var host = String(text[..<colon])
        if host.isEmpty || host == "localhost" { host = "127.0.0.1" }
        var probe = in_addr()
        guard inet_pton(AF_INET, host, &probe) == 1 else {
            throw HostSetupError("metrics address '\(text)': '\(host)' is not an IPv4 address")
        }
        self = .tcp(host: host, port: port)
    }

    /// Who beyond this machine's own users can reach the address, in words
    /// for the log (completing "--metrics 0.0.0.0:9464 …"); nil for a
    /// socket path or a loopback address (127.0.0.0/8).
    public var exposure: String? {
        guard case .tcp(let host, _) = self else { return nil }
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
        let value = UInt32(bigEndian: address.s_addr)
        if value >> 24 == 127 { return nil }
        if value == 0 { return "listens on every interface: anyone who can reach this machine can read which plug-ins run and how often" }
        return "listens on \(host), not loopback: anyone who can reach that address can read which plug-ins run and how often"
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port): "\(host):\(port)"
        case .unix(let path): path
        }
    }

    /// A socket of the address's family, and the address to bind or connect.
    func withSocketAddress<R>(_ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> R) -> R? {
        switch self {
        case .tcp(let host, let port):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .unix(let path):
            guard var address = SocketClient.address(path) else { return nil }
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
    }
}
