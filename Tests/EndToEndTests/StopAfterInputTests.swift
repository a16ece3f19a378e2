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
///
/// Every input kind (docs/usage.md, "run"), each in both isolation modes and
/// with both stop signals: stdin at EOF, a FILE argument, a regular file on
/// stdin, a FIFO whose writer closed, a socket whose client shut down its
/// side. The host must exit within the grace period and 1 s of the signal,
/// and the hung request's record must be `Timeout` naming the grace period.
@Suite("Stop after the input ended", .ownThreads)
struct StopAfterInputTests {
    /// Every (isolation, signal) pair.
    static let stops: [(String, Int32)] = [("process", SIGTERM), ("none", SIGTERM), ("process", SIGINT), ("none", SIGINT)]

    /// A request that never finishes, then one the calculator answers at
    /// once: its record proves both lines were read.
    static let lines = ["faulty://x-callback-url/hang", "calc://x-callback-url/add?lhs=1&rhs=2"]
    static var bytes: [UInt8] { Array(lines.map { $0 + "\n" }.joined().utf8) }
    /// A `--timeout` no run here comes near, however loaded the machine: a
    /// record that says it is the stop's grace period that ended it.
    static let options = ["--output", "jsonl", "--grace-period", "1", "--timeout", "600"]

    /// The grace period and the 1 s the host may take past it to exit
    /// (stretched under sanitizers). Timed on a thread of its own from the
    /// signal to the exit (`stopAndTimeExit`), so the bound needs no slack
    /// for the test's task: hosts here exit 1.02 to 1.16 s after the signal,
    /// also beside four CPU hogs.
    static let exitBound = 1 + TestTiming.scaled(1)

    /// Once the calculator's record is out, stops `child` with `signal`,
    /// waits for its exit and checks status and time; returns the stdout
    /// records. Every wait is awaited on a thread of its own, never on one
    /// of Swift Testing's: these tests run side by side.
    static func stopOnceAnswered(_ child: ChildProcess, signal: Int32,
                                 sourceLocation: SourceLocation = #_sourceLocation) async throws -> [Record] {
        // Both lines read, and the calculator answered: the input is done.
        try #require(await child.awaitStdoutLines(1, timeout: TestTiming.scaled(60)), "stderr: \(child.stderr)",
                     sourceLocation: sourceLocation)
        let (_, seconds) = await child.stopAndTimeExit(signal: signal)
        let status = await child.awaitExit(timeout: 15, sourceLocation: sourceLocation)
        #expect(status == .exited(signal == SIGINT ? 130 : 0), "stderr: \(child.stderr)", sourceLocation: sourceLocation)
        #expect(seconds.map { $0 < exitBound } == true, "exited \(seconds ?? -1) s after the stop",
                sourceLocation: sourceLocation)
        return try child.stdoutLines.map { try Record(jsonLine: $0) }
    }

    /// Both lines have a record, and the hung one says Timeout within the
    /// 1 s grace period.
    static func expectHungTimedOut(_ records: [Record], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(records.count == 2, "\(records)", sourceLocation: sourceLocation)
        #expect(records.contains { $0.input == lines[1] && $0.params["result"] == "3" }, "\(records)",
                sourceLocation: sourceLocation)
        let hung = records.first { $0.input == lines[0] }
        #expect(hung?.errorCode == "Timeout", "\(records)", sourceLocation: sourceLocation)
        #expect(hung?.params["errorMessage"]?.contains("within the 1.0 s grace period") == true, "\(records)",
                sourceLocation: sourceLocation)
    }

    @Test("stdin at EOF, a request in flight, then a stop: exit within the grace period, Timeout says so",
          .scaledTimeLimit(minutes: 1), arguments: stops)
    func stdinAtEOF(isolation: String, signal: Int32) async throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: isolation)
        let child = try fixture.start(Self.options, stdin: .bytes(Self.bytes))
        Self.expectHungTimedOut(try await Self.stopOnceAnswered(child, signal: signal))
    }

    @Test("a FILE argument read to its end, a request in flight, then a stop: exit within the grace period",
          .scaledTimeLimit(minutes: 1), arguments: stops)
    func fileArgument(isolation: String, signal: Int32) async throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: isolation)
        let file = fixture.scratch.file("requests.txt")
        try Data(Self.bytes).write(to: URL(fileURLWithPath: file))
        let child = try fixture.start(Self.options + [file], stdin: .null)
        Self.expectHungTimedOut(try await Self.stopOnceAnswered(child, signal: signal))
    }

    @Test("a regular file on stdin read to its end, a request in flight, then a stop: exit within the grace period",
          .scaledTimeLimit(minutes: 1), arguments: stops)
    func fileOnStdin(isolation: String, signal: Int32) async throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: isolation)
        let file = fixture.scratch.file("requests.txt")
        try Data(Self.bytes).write(to: URL(fileURLWithPath: file))
        let child = try fixture.start(Self.options, stdin: .file(file))
        Self.expectHungTimedOut(try await Self.stopOnceAnswered(child, signal: signal))
    }

    @Test("a FIFO whose writer closed, a request in flight, then a stop: exit within the grace period",
          .scaledTimeLimit(minutes: 1), arguments: stops)
    func fifoWriterClosed(isolation: String, signal: Int32) async throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: isolation)
        let fifo = fixture.scratch.file("requests.fifo")
        let child = try fixture.start(Self.options + ["--fifo", fifo], stdin: .null)
        try #require(await offCooperativePool { waitForFIFOReader(fifo, host: child) }, "stderr: \(child.stderr)")
        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(writer >= 0, "open \(fifo): \(String(cString: strerror(errno)))")
        let bytes = Self.bytes
        #expect(write(writer, bytes, bytes.count) == bytes.count)
        close(writer)  // the only writer: the host reads EOF, and waits for the next one
        Self.expectHungTimedOut(try await Self.stopOnceAnswered(child, signal: signal))
    }

    @Test("a socket client that closed its side, a request in flight, then a stop: exit within the grace period",
          .scaledTimeLimit(minutes: 1), arguments: stops)
    func socketClientDone(isolation: String, signal: Int32) async throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: isolation)
        let path = fixture.scratch.file("host.sock")
        let child = try fixture.start(["--socket", path] + Self.options, stdin: .null)
        try #require(await offCooperativePool { waitForSocketListener(path, host: child) }, "stderr: \(child.stderr)")
        guard let connection = connectUnixSocket(path) else { throw HarnessError("cannot connect") }
        defer { close(connection) }
        let lines = Self.bytes
        #expect(send(connection, lines, lines.count, Int32(MSG_NOSIGNAL)) == lines.count)
        shutdown(connection, Int32(SHUT_WR))
        // The calculator's record: both lines were read, the hang is in flight.
        let first = await offCooperativePool { readAnswerLine(connection) }
        try #require(first.contains("\"result\":\"3\""), "first record: \(first); stderr: \(child.stderr)")
        let (_, seconds) = await child.stopAndTimeExit(signal: signal)
        let answers = try await offCooperativePool { try readAnswers(connection, from: path, timeout: 15) }
            .map { try Record(jsonLine: $0) }
        #expect(await child.awaitExit(timeout: 15) == .exited(signal == SIGINT ? 130 : 0), "stderr: \(child.stderr)")
        #expect(seconds.map { $0 < Self.exitBound } == true, "exited \(seconds ?? -1) s after the stop")
        #expect(answers.count == 1)
        #expect(answers.first?.errorCode == "Timeout", "\(answers)")
        #expect(answers.first?.params["errorMessage"]?.contains("within the 1.0 s grace period") == true, "\(answers)")
    }
}
