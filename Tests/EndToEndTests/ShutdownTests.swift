import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT/SIGTERM (docs/usage.md, "Signals"): no new request is run, but no line
/// that reached the host goes unanswered. Before, lines waiting in the FIFO
/// were dropped with no log line, and socket clients got silence.
@Suite("Shutdown: every line that reached the host is answered", .ownThreads)
struct ShutdownTests {
    static let add = "calc://x-callback-url/add?lhs="

    @Test("socket: lines sent during the grace period are answered ShuttingDown, not run; exit 0",
          .scaledTimeLimit(minutes: 1))
    func socketLinesAfterTheStop() throws {
        let fixture = try HostFixture(["Faulty", "Calculator"])
        let path = fixture.scratch.file("host.sock")
        let child = try fixture.start(["--socket", path, "--output", "jsonl", "--log-level", "info",
                                       "--grace-period", "10"], stdin: .null)
        try #require(waitForSocketListener(path, host: child), "stderr: \(child.stderr)")
        guard let connection = connectUnixSocket(path) else { throw HarnessError("cannot connect") }
        defer { close(connection) }
        // In flight when the signal comes: the host stays in its grace period.
        // The calc record proves both lines were read.
        let first = Array("faulty://x-callback-url/sleep?ms=1500\n\(Self.add)1&rhs=1\n".utf8)
        #expect(send(connection, first, first.count, Int32(MSG_NOSIGNAL)) == first.count)
        let firstRecord = readAnswerLine(connection)
        try #require(firstRecord.contains("\"result\":\"2\""), "first record: \(firstRecord)")
        child.send(signal: SIGTERM)
        try #require(child.waitForStderr(containing: "stop requested"), "stderr: \(child.stderr)")
        let late = (0..<100).map { "\(Self.add)\($0)&rhs=1" }
        let bytes = Array(late.map { $0 + "\n" }.joined().utf8)
        #expect(send(connection, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count)
        shutdown(connection, Int32(SHUT_WR))
        let answers = try readAnswers(connection, from: path, timeout: 20).map { try Record(jsonLine: $0) }
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr)")
        #expect(answers.count == 101, "records after the first: \(answers.count)")
        #expect(answers.filter { $0.params["slept"] == "1500" }.count == 1, "the request in flight finished")
        let refused = answers.filter { $0.errorCode == "ShuttingDown" }
        #expect(Set(refused.compactMap(\.input)) == Set(late))
        #expect(child.waitForStderr(containing: "100 request(s) that arrived after the stop signal were answered ShuttingDown"),
                "stderr: \(child.stderr)")
    }

    @Test("FIFO: lines waiting in the FIFO when the signal comes each get exactly one record",
          .scaledTimeLimit(minutes: 1))
    func fifoLinesWaitingAtTheStop() throws {
        let fixture = try HostFixture(["Calculator"])
        let fifo = fixture.scratch.file("requests.fifo")
        let child = try fixture.start(["--fifo", fifo, "--output", "jsonl", "--log-level", "info"], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")
        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(writer >= 0)
        defer { close(writer) }
        // Stopped, the host reads nothing: the lines wait in the FIFO, and
        // the signal is there when it runs again.
        child.send(signal: SIGSTOP)
        let lines = (0..<200).map { "\(Self.add)\($0)&rhs=0.5" }
        let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
        #expect(write(writer, bytes, bytes.count) == bytes.count)
        child.send(signal: SIGTERM)
        child.send(signal: SIGCONT)
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr)")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        var count: [String: Int] = [:]
        for record in records { count[record.input ?? "", default: 0] += 1 }
        #expect(lines.allSatisfy { count[$0] == 1 }, "records: \(records.count) for \(lines.count) lines")
        for record in records {
            #expect(record.outcome == "success" || record.errorCode == "ShuttingDown", "\(record)")
        }
        // After the stop, a sender is told no host reads the FIFO.
        let late = try xcallback(["send", "--fifo", fifo, "\(Self.add)1&rhs=1"])
        #expect(late.status != .exited(0), "send after the host stopped: \(late.stderr)")
    }

    @Test("SIGTERM to the host and its workers at once (a terminal's Ctrl-C, systemd's stop): no worker is taken for crashed",
          .scaledTimeLimit(minutes: 1))
    func stopSignalToTheWholeGroup() throws {
        let fixture = try HostFixture(["Calculator", "Faulty"], isolation: "process")
        let fifo = fixture.scratch.file("requests.fifo")
        let child = try fixture.start(["--fifo", fifo, "--log-level", "info"], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")
        let workers = workerProcesses(of: child.pid)
        try #require(workers.count == 2, "workers: \(workers)")
        for worker in workers { kill(worker, SIGTERM) }
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr)")
        // The summary is the host's last line: stderr is complete.
        #expect(child.waitForStderr(containing: "xcallback: processed"), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("restarting"), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("SIGTERM"), "a worker was reported killed: \(child.stderr)")
        for worker in workers { #expect(waitUntilGone(worker, timeout: 5), "worker \(worker) outlived the host") }
    }

    @Test("socket: a connection still in the listen backlog at the stop gets a record per line, not silence",
          .scaledTimeLimit(minutes: 1))
    func connectionInTheBacklog() throws {
        let fixture = try HostFixture(["Calculator"])
        let path = fixture.scratch.file("host.sock")
        let child = try fixture.start(["--socket", path, "--output", "jsonl"], stdin: .null)
        try #require(waitForSocketListener(path, host: child), "stderr: \(child.stderr)")
        // Stopped, the host accepts nothing: the connection waits in the
        // backlog with its lines, and the signal is there when it runs again.
        child.send(signal: SIGSTOP)
        let lines = (0..<50).map { "\(Self.add)\($0)&rhs=1" }
        let connection = try sendOverSocket(path, lines: lines)
        defer { close(connection) }
        child.send(signal: SIGTERM)
        child.send(signal: SIGCONT)
        let answers = try readAnswers(connection, from: path, timeout: 20).map { try Record(jsonLine: $0) }
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr)")
        #expect(answers.count == lines.count, "records: \(answers.count) for \(lines.count) lines")
        #expect(answers.allSatisfy { $0.outcome == "success" || $0.errorCode == "ShuttingDown" }, "\(answers)")
    }
}
