import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `xcallback top` trusts nothing its server says (docs/observability.md,
/// "`xcallback top`"): any local user can take 127.0.0.1:9464 while no host
/// holds it. Labels, the status line and every error text are escaped
/// before they are shown, and a page that is not the metrics format is
/// refused. Before, a label or status line with escape sequences was
/// written raw: the terminal's title changed and the clipboard was written
/// (OSC 52).
@Suite("top against a hostile server", .ownThreads)
struct TopHostileServerTests {
    /// A loopback HTTP server that answers every connection with `response`.
    final class Server: @unchecked Sendable {
        let port: UInt16
        private let listener: Int32
        private let done = DispatchSemaphore(value: 0)

        init(response: [UInt8]) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, $0, &length) == 0
                }
            }
            guard bound else {
                close(listener)
                throw HarnessError("cannot listen on loopback: \(String(cString: strerror(errno)))")
            }
            self.listener = listener
            port = UInt16(bigEndian: address.sin_port)
            Thread.detachNewThread { [listener, done] in
                while true {
                    let connection = accept(listener, nil, nil)
                    guard connection >= 0 else {
                        if errno == EINTR { continue }
                        break
                    }
                    // A child spawned meanwhile may inherit it: the answer
                    // still ends, since it is shut down, not only closed.
                    _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                    // The request head, roughly: top sends one small one.
                    var chunk = [UInt8](repeating: 0, count: 4096)
                    _ = recv(connection, &chunk, chunk.count, 0)
                    _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    shutdown(connection, Int32(SHUT_WR))
                    close(connection)
                }
                done.signal()
            }
        }

        var address: String { "127.0.0.1:\(port)" }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            _ = done.wait(timeout: .now() + 10)
            close(listener)
        }
    }

    /// Control sequences a terminal acts on: a title (OSC 0, ended by BEL),
    /// the clipboard (OSC 52), CSI as ESC [ and as the C1 byte U+009B,
    /// a bell, a backspace and a carriage return.
    static let hostile = "\u{1B}]0;pwned\u{07}\u{1B}]52;c;SGVsbG8=\u{07}\u{1B}[2J\u{9B}31m\u{08}\r"

    static func response(status: String = "200 OK", contentType: String = "text/plain; version=0.0.4",
                         body: String) -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
    }

    /// A page of the host's format whose plug-in label is hostile.
    static let page = """
        # TYPE xcallback_build_info gauge
        xcallback_build_info{version="1",abi="1.2",sandbox="off",isolation="process"} 1
        xcallback_requests_total{plugin="evil\(hostile)",outcome="success"} 3
        xcallback_requests_total{plugin="plain",outcome="success"} 1

        """

    /// The bytes of `text` a terminal would act on, other than newlines:
    /// below 0x20, DEL, and C1 (U+0080 to U+009F).
    static func controls(_ text: String) -> [UInt32] {
        text.unicodeScalars.map(\.value).filter { ($0 < 0x20 && $0 != 0x0A) || (0x7F...0x9F).contains($0) }
    }

    @Test("piped: the hostile label is printed escaped, and no control byte", .scaledTimeLimit(minutes: 1))
    func piped() throws {
        let server = try Server(response: Self.response(body: Self.page))
        defer { server.stop() }
        let result = try xcallback(["top", "--count", "1", server.address], timeout: TestTiming.scaled(20))
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(Self.controls(result.stdout).isEmpty, "stdout: \(result.stdout.debugDescription)")
        #expect(Self.controls(result.stderr).isEmpty, "stderr: \(result.stderr.debugDescription)")
        #expect(result.stdout.contains("plugin=evil\\x1b]0;pwned\\x07"), "\(result.stdout)")
        #expect(result.stdout.contains("plugin=plain "), "\(result.stdout)")
    }

    @Test("in a terminal: nothing but top's own screen controls", .requires(.script), .scaledTimeLimit(minutes: 1))
    func terminal() throws {
        let server = try Server(response: Self.response(body: Self.page))
        defer { server.stop() }
        let command = "\(Products.xcallback) top --count 2 --interval 0.1 \(server.address)"
        let top = try ChildProcess(["-qfec", command, "/dev/null"], executable: TopTests.script, stdin: .pipe)
        #expect(top.waitForExit(timeout: TestTiming.scaled(20)) == .exited(0), "stderr: \(top.stderr)")
        #expect(top.stdout.contains("evil\\x1b]0;pwned"), "\(top.stdout.debugDescription)")
        // Top's own: the alternate screen, the cursor, home and clear. The
        // carriage returns are the terminal's (a newline becomes CR LF).
        var rest = top.stdout
        for own in ["\u{1B}[?1049h", "\u{1B}[?25l", "\u{1B}[H\u{1B}[2J", "\u{1B}[?25h", "\u{1B}[?1049l"] {
            rest = rest.replacingOccurrences(of: own, with: "")
        }
        rest = rest.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(Self.controls(rest).isEmpty, "stdout: \(top.stdout.debugDescription)")
    }

    @Test("a hostile status line is quoted escaped; a page of another format is refused",
          .scaledTimeLimit(minutes: 1))
    func refusals() throws {
        let cases: [(response: [UInt8], message: String)] = [
            (Self.response(status: "404 \(Self.hostile)", body: "no\n"), "answered: 'HTTP/1.1 404 \\x1b]0;pwned\\x07"),
            (Self.response(contentType: "text/html", body: "<html>\(Self.hostile)</html>"), "not a metrics page"),
            (Self.response(body: "some_other_exporter{label=\"\(Self.hostile)\"} 1\n"), "serves no xcallback metrics"),
        ]
        for (response, message) in cases {
            let server = try Server(response: response)
            defer { server.stop() }
            let result = try xcallback(["top", "--count", "1", server.address], timeout: TestTiming.scaled(20))
            #expect(result.status == .exited(1), "stderr: \(result.stderr)")
            #expect(result.stderr.contains(message), "stderr: \(result.stderr.debugDescription)")
            #expect(Self.controls(result.stderr).isEmpty, "stderr: \(result.stderr.debugDescription)")
            #expect(result.stdout.isEmpty, "stdout: \(result.stdout.debugDescription)")
        }
    }
}
