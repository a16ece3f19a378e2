import CHostSupport
import Logging
import XCallbackMetrics
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Serves `GET /metrics` for `run --metrics`, on a thread of its own:
/// one connection at a time, each bounded in size and time, so a scraper
/// can never hold up the host's inputs or replies, nor the host's memory.
public final class MetricsServer: Sendable {
    public let address: MetricsAddress
    private let listener: Int32
    /// Written to once, by `stop`, to end the serving thread's poll.
    private let wake: (read: Int32, write: Int32)
    private let metrics: HostMetrics
    private let done = ConditionLock(false)
    /// A Unix address's socket file, held (`BoundSocketFile`).
    private let socketFile: BoundSocketFile?

    /// A request's head may be this long; a longer one is answered 431.
    static let maxRequestBytes = 8 * 1024
    /// How long a client may take to send its request and take the whole
    /// answer: one deadline for the exchange, so one that stops reading
    /// holds the next scrape up this long at most.
    static let clientTimeoutMilliseconds: Int32 = 2000

    /// Listens at `address` (port 0: any free port, said by `address`).
    public init(address: MetricsAddress, metrics: HostMetrics) throws(HostSetupError) {
        self.metrics = metrics
        if case .unix(let path) = address {
            var info = stat()
            if lstat(path, &info) == 0 {
                guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                    throw HostSetupError("\(path) exists and is not a socket; refusing to replace it")
                }
                if let fd = SocketClient.connect(path) {
                    close(fd)
                    throw HostSetupError("another process is already listening on \(path)")
                }
                BoundSocketFile.removeLeftover(at: path)
            }
        }
        var failure: String?
        let listener = address.withSocketAddress { fd, socketAddress, length -> Int32 in
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            guard bind(fd, socketAddress, length) == 0, listen(fd, 16) == 0 else {
                failure = String(cString: strerror(errno))
                close(fd)
                return -1
            }
            return fd
        } ?? -1
        guard listener >= 0 else {
            throw HostSetupError("--metrics: cannot listen on \(address): \(failure ?? "not an address")")
        }
        var bound = address
        var socketFile: BoundSocketFile? = nil
        if case .tcp(let host, _) = address {
            var actual = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &actual) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
            }
            bound = .tcp(host: host, port: UInt16(bigEndian: actual.sin_port))
        } else if case .unix(let path) = address {
            guard let file = BoundSocketFile(path: path), file.restrict(to: 0o600) else {
                close(listener)
                throw HostSetupError("--metrics: the socket file \(path) was replaced as it was made; not listening there")
            }
            socketFile = file
        }
        var pipeEnds: [Int32] = [0, 0]
        guard xcallback_pipe_cloexec(&pipeEnds) == 0 else {
            close(listener)
            throw HostSetupError("--metrics: pipe: \(String(cString: strerror(errno)))")
        }
        self.listener = listener
        self.socketFile = socketFile
        self.wake = (pipeEnds[0], pipeEnds[1])
        self.address = bound
    }

    /// Starts the serving thread.
    public func start() {
        Threads.detach { [self] in
            serve()
            done.withLock { $0 = true }
            done.broadcast()
        }
    }

    /// Stops serving (the connection under way, if any, is dropped: a stop
    /// never waits on a client), and removes the socket file of a Unix
    /// address.
    public func stop() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        done.wait(until: { $0 }) { _ in }
        close(listener)
        close(wake.read)
        close(wake.write)
        socketFile?.remove()
    }

    private func serve() {
        while true {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            let connection = xcallback_accept_cloexec(listener)
            guard connection >= 0 else { continue }
            answer(connection)
            close(connection)
        }
    }

    /// Reads one request head and answers it, all within one deadline;
    /// gives up on the client at the deadline or at a stop.
    private func answer(_ connection: Int32) {
        let deadline = MonotonicClock.now + UInt64(Self.clientTimeoutMilliseconds) * 1_000_000
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while HTTPRequestHead.end(of: head) == nil {
            guard head.count < Self.maxRequestBytes else {
                respond(connection, status: "431 Request Header Fields Too Large", body: "request head too long\n",
                        deadline: deadline)
                return
            }
            let now = MonotonicClock.now
            guard now < deadline else { return }
            var events = [pollfd(fd: connection, events: Int16(POLLIN), revents: 0),
                          pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&events, 2, Int32((deadline - now) / 1_000_000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0, events[1].revents == 0 else { return }
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { continue }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            head += chunk[..<count]
        }
        guard let request = HTTPRequestHead(head) else {
            respond(connection, status: "400 Bad Request", body: "not an HTTP request\n", deadline: deadline)
            return
        }
        guard request.path == "/metrics" || request.path.hasPrefix("/metrics?") else {
            respond(connection, status: "404 Not Found", body: "only /metrics is served here\n", deadline: deadline)
            return
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            respond(connection, status: "405 Method Not Allowed", body: "only GET\n", extra: "Allow: GET, HEAD\r\n",
                    deadline: deadline)
            return
        }
        let format = ExpositionFormat.negotiated(accept: request.header("accept"))
        respond(connection, status: "200 OK", body: metrics.exposition(format), contentType: format.contentType,
                headOnly: request.method == "HEAD", deadline: deadline)
    }

    /// Sends the answer by `deadline`; a client that has not taken it all
    /// by then, or by a stop, is dropped.
    private func respond(_ connection: Int32, status: String, body: String,
                         contentType: String = "text/plain; charset=utf-8", extra: String = "", headOnly: Bool = false,
                         deadline: UInt64) {
        let bodyBytes = Array(body.utf8)
        var response = Array("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(bodyBytes.count)\r\n\(extra)Connection: close\r\n\r\n".utf8)
        if !headOnly { response += bodyBytes }
        guard DeadlineWrite.send(connection, response, deadline: deadline, wake: wake.read) == .written else {
            // What the client did not take is thrown away, not sent on
            // after the close.
            shutdown(connection, Int32(SHUT_RDWR))
            return
        }
        // The client reads to the end; shut the sending side so it sees one.
        shutdown(connection, Int32(SHUT_WR))
    }
}

/// The request line and headers of an HTTP/1.x request.
struct HTTPRequestHead {
    var method: String
    var path: String
    var headers: [(name: String, value: String)]

    /// Where the head ends (after its blank line), if it has.
    static func end(of bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for index in 1..<bytes.count where bytes[index] == 0x0A {
            if bytes[index - 1] == 0x0A { return index + 1 }
            if index >= 3 && bytes[index - 1] == 0x0D && bytes[index - 2] == 0x0A && bytes[index - 3] == 0x0D { return index + 1 }
        }
        return nil
    }

    init?(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return nil }
        method = String(requestLine[0])
        path = String(requestLine[1])
        headers = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingSpaces))
        }
    }

    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
