import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A stop after the input was read to its end (issue 28): SIGTERM or SIGINT
/// gives what is in flight the grace period, not `--timeout`. Before, a
/// host whose stdin had reached EOF waited the whole `--timeout` (18.5 s
/// with `--grace-period 1 --timeout 20`), and its record said "within
/// 20.0 s".
@Suite("Stop after the input ended")
struct StopAfterInputTests {
    @Test("stdin at EOF, a request in flight, then a stop: exit within the grace period, Timeout says so",
          .scaledTimeLimit(minutes: 1),
          arguments: [("process", SIGTERM), ("none", SIGTERM), ("process", SIGINT), ("none", SIGINT)])
    func stdinAtEOF(isolation: String, signal: Int32) throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: isolation)
        let lines = ["faulty://x-callback-url/hang", "calc://x-callback-url/add?lhs=1&rhs=2"]
        let child = try fixture.start(["--output", "jsonl", "--grace-period", "1", "--timeout", "20"],
                                      stdin: .bytes(Array(lines.map { $0 + "\n" }.joined().utf8)))
        // Both lines read, and the calculator answered: the input is done.
        try #require(child.waitForStdoutLines(1, timeout: TestTiming.scaled(10)), "stderr: \(child.stderr)")
        let stopped = Date()
        child.send(signal: signal)
        let status = child.waitForExit(timeout: TestTiming.scaled(15))
        let seconds = Date().timeIntervalSince(stopped)
        #expect(status == .exited(signal == SIGINT ? 130 : 0), "stderr: \(child.stderr)")
        #expect(seconds < 1 + 1 + TestTiming.scaled(1), "exited \(seconds) s after the stop")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == 2)
        let hung = records.first { $0.input == lines[0] }
        #expect(hung?.errorCode == "Timeout", "\(records)")
        #expect(hung?.params["errorMessage"]?.contains("within the 1.0 s grace period") == true, "\(records)")
    }

    @Test("a socket client that closed its side, a request in flight, then SIGTERM: exit within the grace period",
          .scaledTimeLimit(minutes: 1))
    func socketClientDone() throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: "process")
        let path = fixture.scratch.file("host.sock")
        let child = try fixture.start(["--socket", path, "--output", "jsonl", "--grace-period", "1", "--timeout", "20"],
                                      stdin: .null)
        try #require(waitForSocketListener(path, host: child), "stderr: \(child.stderr)")
        guard let connection = connectUnixSocket(path) else { throw HarnessError("cannot connect") }
        defer { close(connection) }
        let lines = Array("faulty://x-callback-url/hang\ncalc://x-callback-url/add?lhs=1&rhs=2\n".utf8)
        #expect(send(connection, lines, lines.count, Int32(MSG_NOSIGNAL)) == lines.count)
        shutdown(connection, Int32(SHUT_WR))
        // The calculator's record: both lines were read, the hang is in flight.
        let first = readAnswerLine(connection)
        try #require(first.contains("\"result\":\"3\""), "first record: \(first)")
        let stopped = Date()
        child.send(signal: SIGTERM)
        let answers = try readAnswers(connection, from: path, timeout: 15).map { try Record(jsonLine: $0) }
        #expect(child.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(child.stderr)")
        let seconds = Date().timeIntervalSince(stopped)
        #expect(seconds < 1 + 1 + TestTiming.scaled(1), "exited \(seconds) s after the stop")
        #expect(answers.count == 1)
        #expect(answers.first?.errorCode == "Timeout", "\(answers)")
        #expect(answers.first?.params["errorMessage"]?.contains("within the 1.0 s grace period") == true, "\(answers)")
    }
}
