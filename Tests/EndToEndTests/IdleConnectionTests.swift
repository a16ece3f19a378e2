import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Idle connections cannot lock everyone out (docs/usage.md):
/// before, 300 connections that sent half a line each held every slot, and
/// a normal client waited unanswered in the listen backlog.
@Suite("Idle socket connections", .ownThreads)
struct IdleConnectionTests {
    static let halfLine = Array("calc://x-callback-url/add?lhs=1".utf8)

    /// Reads all `connections` at once until `expecting` of them answered
    /// one `Busy` record and closed (or `timeout` passes); returns how many did.
    static func busyAnswers(on connections: [Int32], expecting: Int, timeout: Double) throws -> Int {
        var pending = connections.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var received = [Int32: [UInt8]]()
        var busy = 0
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(timeout))
        var chunk = [UInt8](repeating: 0, count: 4096)
        while busy < expecting, !pending.isEmpty {
            let wait = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            let ready = poll(&pending, nfds_t(pending.count), wait)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
            for index in pending.indices.reversed() where pending[index].revents != 0 {
                let descriptor = pending[index].fd
                let count = read(descriptor, &chunk, chunk.count)
                if count > 0 {
                    received[descriptor, default: []] += chunk[0..<count]
                    pending[index].revents = 0
                    continue
                }
                let text = String(decoding: received[descriptor] ?? [], as: UTF8.self)
                if text.hasPrefix("error?errorCode=Busy&"), text.contains("errorDomain=xcallback"), text.hasSuffix("\n") {
                    busy += 1
                }
                pending.remove(at: index)
            }
        }
        return busy
    }

    @Test("300 idle half-line connections: past 64 from one process each is told Busy, and another client is answered at once",
          .scaledTimeLimit(minutes: 1))
    func idleConnectionsLockNoOneOut() throws {
        let fixture = try HostFixture(["Calculator"])
        let path = fixture.scratch.file("host.sock")
        let host = try fixture.start(["--socket", path], stdin: .null)
        try #require(waitForSocketListener(path, host: host), "stderr: \(host.stderr)")
        var connections: [Int32] = []
        defer { connections.forEach { close($0) } }
        for _ in 0..<300 {
            guard let connection = connectUnixSocket(path) else { break }
            _ = Self.halfLine.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            connections.append(connection)
        }
        try #require(connections.count == 300)
        // Another process is served at once.
        let started = Date()
        let call = try xcallback(["call", "--socket", path, "calc://x-callback-url/add?lhs=1&rhs=2"], timeout: TestTiming.scaled(10))
        #expect(call.status == .exited(0), "call: \(call.stdout) \(call.stderr)")
        #expect(call.stdout == "success?result=3\n")
        #expect(Date().timeIntervalSince(started) < TestTiming.scaled(5))
        // This process holds 64 at most (the harness's readiness probe was
        // one of them until the host saw it close): every one past that is
        // answered Busy and closed at once.
        let busy = try Self.busyAnswers(on: connections, expecting: 300 - 64, timeout: 20)
        #expect((236...237).contains(busy), "connections told Busy: \(busy), expected 236 (or 237)")
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 20) == .exited(0), "stderr: \(host.stderr)")
    }

    @Test("a connection that sends no complete line, idle or trickling, is closed after --idle-timeout",
          .scaledTimeLimit(minutes: 1))
    func idleTimeout() throws {
        let fixture = try HostFixture(["Calculator"])
        let path = fixture.scratch.file("host.sock")
        let host = try fixture.start(["--socket", path, "--idle-timeout", "1", "--log-level", "info"], stdin: .null)
        try #require(waitForSocketListener(path, host: host), "stderr: \(host.stderr)")
        guard let idle = connectUnixSocket(path), let trickle = connectUnixSocket(path) else {
            throw HarnessError("cannot connect")
        }
        defer { close(idle); close(trickle) }
        _ = Self.halfLine.withUnsafeBytes { send(idle, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // One byte every 100 ms, never a whole line.
        let started = Date()
        var trickleClosed = false
        for byte in Self.halfLine + Self.halfLine + Self.halfLine {
            var one = byte
            if send(trickle, &one, 1, Int32(MSG_NOSIGNAL)) != 1 {
                trickleClosed = true
                break
            }
            usleep(100_000)
        }
        #expect(trickleClosed || (try? readAnswers(trickle, from: path, timeout: 5)) != nil, "the trickling connection stayed open")
        #expect(Date().timeIntervalSince(started) < TestTiming.scaled(8))
        #expect(try readAnswers(idle, from: path, timeout: 5) == [], "the idle connection got records")
        #expect(host.waitForStderr(containing: "closed a socket connection that sent no complete request line"))
        // A connection that does send its line is still answered.
        #expect(try exchangeOverSocket(path, lines: ["calc://x-callback-url/add?lhs=1&rhs=2"]) == ["success?result=3"])
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 20) == .exited(0))
    }
}
