import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A socket client that stops reading its records is dropped once it has
/// not taken them for `--idle-timeout` (docs/reliability.md, "One bad
/// neighbour"): the records it owes have one deadline, not one per send.
/// Before, its drain thread waited in a blocking send for as long as the
/// client kept the connection, and its input with it.
@Suite("A socket client that never reads", .ownThreads)
struct UnreadRecordsTests {
    @Test("is dropped at the idle timeout; others are answered, and the host stops at once",
          .scaledTimeLimit(minutes: 1))
    func droppedAtDeadline() throws {
        let fixture = try HostFixture(["Calculator"])
        let path = fixture.scratch.file("host.sock")
        let host = try fixture.start(["--socket", path, "--idle-timeout", "1", "--grace-period", "5"], stdin: .null)
        try #require(waitForSocketListener(path, host: host), "stderr: \(host.stderr)")

        // 4 KiB records, far more than the socket buffers hold, and never read.
        let stuck = try #require(connectUnixSocket(path))
        defer { close(stuck) }
        let label = String(repeating: "x", count: 4096)
        let lines = Array((0..<2000).map { "calc://x-callback-url/add?lhs=\($0)&rhs=0&text=\(label)\n" }.joined().utf8)
        let sender = Thread {
            // Ends when everything is sent or the host shuts the connection down.
            _ = lines.withUnsafeBytes { send(stuck, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        sender.start()
        #expect(host.waitForStderr(timeout: TestTiming.scaled(15)) { $0.contains("dropped a socket connection") },
                "stderr: \(host.stderr)")
        // It finds its connection ended after what it had been sent.
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var received = 0
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(10))
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(stuck, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var ended = false
        while Date() < deadline {
            let count = recv(stuck, &chunk, chunk.count, 0)
            if count > 0 { received += count; continue }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            ended = true
            break
        }
        #expect(ended, "the connection was not ended; \(received) bytes read")
        #expect(received < 2000 * 4096, "every record arrived: nothing was dropped")

        // Another client is answered as usual.
        #expect(try exchangeOverSocket(path, lines: ["calc://x-callback-url/add?lhs=1&rhs=2"]).first?.contains("result=3") == true)
        let stopped = Date()
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: TestTiming.scaled(20)) == .exited(0), "stderr: \(host.stderr)")
        #expect(Date().timeIntervalSince(stopped) < 5, "the stop waited on a client")
    }
}
