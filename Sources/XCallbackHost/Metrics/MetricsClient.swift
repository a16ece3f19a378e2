import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Fetches `/metrics` from a host's metrics address (`xcallback top`).
public enum MetricsClient {
    /// What went wrong, in words for a person. It may quote the server,
    /// which is not trusted: show it escaped (`PrintableText`).
    public struct Failure: Error, Sendable {
        public let message: String
        /// Nothing listens at the address (refused, or no such socket
        /// file): no host serves metrics there, which `top` says how to fix.
        public var nobodyListens = false

        public init(message: String, nobodyListens: Bool = false) {
            self.message = message
            self.nobodyListens = nobodyListens
        }
    }

    /// The body of `GET /metrics`, within `timeoutMilliseconds`.
    public static func fetch(_ address: MetricsAddress, timeoutMilliseconds: Int32 = 2000) throws(Failure) -> String {
        var failure = "cannot connect to \(address)"
        var nobodyListens = false
        let body = address.withSocketAddress { fd, socketAddress, length -> String? in
            defer { close(fd) }
            var timeout = timeval(tv_sec: Int(timeoutMilliseconds / 1000), tv_usec: Int(timeoutMilliseconds % 1000) * 1000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard connect(fd, socketAddress, length) == 0 else {
                nobodyListens = errno == ECONNREFUSED || errno == ENOENT
                failure = "cannot connect to \(address): \(String(cString: strerror(errno)))"
                return nil
            }
            let request = Array("GET /metrics HTTP/1.1\r\nHost: xcallback\r\nAccept: text/plain\r\nConnection: close\r\n\r\n".utf8)
            guard !request.withUnsafeBytes({ BufferedWriter.writeAll(fd, $0) }) else { return nil }
            // One deadline for the whole answer: a server that sends a byte
            // now and then must not hold top for longer.
            let deadline = MonotonicClock.now + UInt64(timeoutMilliseconds) * 1_000_000
            var response: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let now = MonotonicClock.now
                guard now < deadline else {
                    failure = "\(address) did not answer within \(timeoutMilliseconds) ms"
                    return nil
                }
                var event = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&event, 1, Int32((deadline - now) / 1_000_000) + 1)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0 else { continue }
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else {
                    failure = "reading from \(address): \(String(cString: strerror(errno)))"
                    return nil
                }
                if count == 0 { break }
                response += chunk[..<count]
                guard response.count < 64 * 1024 * 1024 else { return nil }
            }
            // Whatever answers there is not trusted: any local user can
            // take a loopback port no host holds. A page that is not the
            // text format is refused.
            let headEnd = headEnd(of: response)
            let text = String(decoding: response[..<(headEnd ?? response.count)], as: UTF8.self)
            guard text.hasPrefix("HTTP/1.1 200") || text.hasPrefix("HTTP/1.0 200"), let headEnd else {
                failure = "\(address) answered: \(quoted(String(text.prefix(while: { $0 != "\r" && $0 != "\n" }))))"
                return nil
            }
            let contentType = text.split(separator: "\r\n").dropFirst()
                .first { $0.lowercased().hasPrefix("content-type:") }
                .map { $0.dropFirst("content-type:".count).drop(while: { $0 == " " }).lowercased() } ?? ""
            guard contentType.hasPrefix("text/plain") || contentType.hasPrefix("application/openmetrics-text") else {
                failure = "\(address) answered with \(contentType.isEmpty ? "no Content-Type" : "Content-Type \(quoted(contentType))"), not a metrics page"
                return nil
            }
            guard let page = String(validating: response[(headEnd + 4)...], as: UTF8.self) else {
                failure = "\(address) answered with a page that is not UTF-8, not a metrics page"
                return nil
            }
            return page
        } ?? nil
        guard let body else { throw Failure(message: failure, nobodyListens: nobodyListens) }
        return body
    }

    /// Where the response's head ends: the index of its blank line's CR.
    static func headEnd(of response: [UInt8]) -> Int? {
        guard response.count >= 4 else { return nil }
        return (0...(response.count - 4)).first { response[$0] == 13 && response[$0 + 1] == 10
            && response[$0 + 2] == 13 && response[$0 + 3] == 10 }
    }

    /// A server's words, quoted and cut at 200 characters. Not escaped
    /// here: whoever shows a `Failure` escapes it whole (`top` does).
    static func quoted(_ text: String) -> String {
        "'" + (text.count > 200 ? String(text.prefix(200)) + "…" : text) + "'"
    }
}
