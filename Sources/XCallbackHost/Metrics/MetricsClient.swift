import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Fetches `/metrics` from a host's metrics address (`xcallback top`).
public enum MetricsClient {
    /// What went wrong, in words for a person.
    public struct Failure: Error, Sendable {
        public let message: String
        /// Nothing listens at the address (refused, or no such socket
        /// file): no host serves metrics there, which `top` says how to fix.
        public var nobodyListens = false
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
            var response: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
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
            let text = String(decoding: response, as: UTF8.self)
            guard text.hasPrefix("HTTP/1.1 200") || text.hasPrefix("HTTP/1.0 200"),
                  let split = text.range(of: "\r\n\r\n") else {
                failure = "\(address) answered: \(text.prefix(while: { $0 != "\r" && $0 != "\n" }))"
                return nil
            }
            return String(text[split.upperBound...])
        } ?? nil
        guard let body else { throw Failure(message: failure, nobodyListens: nobodyListens) }
        return body
    }
}
