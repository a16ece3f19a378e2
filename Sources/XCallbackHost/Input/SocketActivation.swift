#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A listening socket handed over by systemd socket activation.
public struct InheritedSocket: Sendable {
    public let descriptor: Int32
    /// The path it is bound to; nil for an abstract or unnamed socket.
    public let path: String?
    /// Descriptors passed after the first one; the host serves only the first.
    public let ignoredCount: Int
}

/// systemd socket activation (`sd_listen_fds(3)`, without libsystemd): when
/// `LISTEN_PID` is this process and `LISTEN_FDS` is at least 1, descriptor 3
/// is a socket systemd listens on for us.
public enum SocketActivation {
    public static let firstDescriptor: Int32 = 3
    static let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]

    /// The listening socket systemd passed, or nil when this process was not
    /// socket-activated. Throws when the variables say it was but
    /// descriptor 3 is not a listening Unix stream socket.
    ///
    /// Removes the variables from the environment, so workers and `--open`
    /// commands do not take them for their own, and marks the descriptors
    /// close-on-exec. It changes the environment: call it before any thread
    /// starts.
    public static func takeInheritedSocket() throws(HostSetupError) -> InheritedSocket? {
        let pidText = value("LISTEN_PID")
        let countText = value("LISTEN_FDS")
        for name in variables { unsetenv(name) }
        // Variables meant for another process (a parent that was activated
        // and did not clear them) are not ours to act on.
        guard let pidText, let pid = pid_t(pidText), pid == getpid() else { return nil }
        guard let countText, let count = Int32(countText), count >= 0 else {
            throw HostSetupError("socket activation: LISTEN_FDS is '\(countText ?? "")', not a number of descriptors")
        }
        guard count >= 1 else { return nil }
        for descriptor in firstDescriptor..<(firstDescriptor + count) {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
        if let problem = problem(with: firstDescriptor) {
            throw HostSetupError(
                "socket activation: LISTEN_FDS says descriptor \(firstDescriptor) is a listening socket, but \(problem); expected a listening Unix stream socket")
        }
        return InheritedSocket(descriptor: firstDescriptor, path: boundPath(firstDescriptor), ignoredCount: Int(count) - 1)
    }

    private static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// What keeps `descriptor` from being a listening Unix stream socket, or nil.
    static func problem(with descriptor: Int32) -> String? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return "it is not open (\(String(cString: strerror(errno))))" }
        let type = info.st_mode & S_IFMT
        guard type == S_IFSOCK else {
            switch type {
            case S_IFREG: return "it is a regular file"
            case S_IFIFO: return "it is a pipe"
            case S_IFCHR: return "it is a character device"
            case S_IFDIR: return "it is a directory"
            default: return "it is not a socket"
            }
        }
        guard option(SO_DOMAIN, of: descriptor) == AF_UNIX else { return "it is not a Unix-domain socket" }
        guard option(SO_TYPE, of: descriptor) == Int32(SOCK_STREAM.rawValue) else { return "it is not a stream socket" }
        guard option(SO_ACCEPTCONN, of: descriptor) == 1 else { return "it is not listening" }
        return nil
    }

    private static func option(_ name: Int32, of descriptor: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
    }

    private static func boundPath(_ descriptor: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        guard named == 0, Int(length) > pathOffset else { return nil }
        return withUnsafeBytes(of: &address.sun_path) { raw -> String? in
            let bytes = raw.prefix(Int(length) - pathOffset)
            // A leading NUL is the abstract namespace: no file to speak of.
            guard let first = bytes.first, first != 0 else { return nil }
            return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
