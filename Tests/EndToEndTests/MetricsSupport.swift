import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Reading a host's `/metrics` in the tests: a raw HTTP/1.1 request over
/// its Unix socket or TCP port, and the samples by their exact text.
enum Scrape {
    /// The whole HTTP response (status line, headers, body), or nil when
    /// no one answers.
    static func response(unix path: String? = nil, port: UInt16? = nil, request: String) -> String? {
        let descriptor: Int32
        if let path {
            guard let connected = connectUnixSocket(path) else { return nil }
            descriptor = connected
        } else {
            guard let port, let connected = connectTCP(port: port) else { return nil }
            descriptor = connected
        }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: Int(TestTiming.scaled(5)), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            return nil
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            received += chunk[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    static func connectTCP(port: UInt16) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    static func get(_ target: String = "/metrics", accept: String? = nil) -> String {
        "GET \(target) HTTP/1.1\r\nHost: test\r\n" + (accept.map { "Accept: \($0)\r\n" } ?? "") + "Connection: close\r\n\r\n"
    }

    /// The body of `GET /metrics`.
    static func body(unix path: String? = nil, port: UInt16? = nil) -> String? {
        guard let response = response(unix: path, port: port, request: get()),
              response.hasPrefix("HTTP/1.1 200"), let split = response.range(of: "\r\n\r\n") else { return nil }
        return String(response[split.upperBound...])
    }

    /// Samples by their text before the value: `name{label="value",...}`.
    static func samples(_ body: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in body.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    /// Scrapes until `predicate` holds for the samples (a counter reaching
    /// what the test drove it to), within `timeout` seconds; the last
    /// samples either way.
    @discardableResult
    static func waitFor(unix path: String? = nil, port: UInt16? = nil, timeout: Double = 10,
                        _ predicate: ([String: Double]) -> Bool) -> (held: Bool, samples: [String: Double]) {
        let deadline = Date().addingTimeInterval(TestTiming.scaled(timeout))
        var last: [String: Double] = [:]
        while true {
            if let body = body(unix: path, port: port) {
                last = samples(body)
                if predicate(last) { return (true, last) }
            }
            guard Date() < deadline else { return (false, last) }
            // The counters move when the host's threads get to it: look
            // again shortly (each look is a full scrape, a few ms).
            usleep(20_000)
        }
    }
}
