import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Idle connections cannot lock everyone out (README, "Long-lived hosts"):
/// before, 300 connections that sent half a line each held every slot, and
/// a normal client waited unanswered in the listen backlog.
@Suite("Idle socket connections")
struct IdleConnectionTests {
    static let halfLine = Array("calc://x-callback-url/add?lhs=1".utf8)

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
        // This process holds 64; every one past that was answered Busy and closed.
        var busy = 0
        for connection in connections.suffix(300 - 64) {
            let answers = try readAnswers(connection, from: path, timeout: 5)
            if answers.count == 1, answers[0].hasPrefix("error?errorCode=Busy&"), answers[0].contains("errorDomain=xcallback") {
                busy += 1
            }
        }
        #expect(busy == 236, "connections told Busy: \(busy) of 236")
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
