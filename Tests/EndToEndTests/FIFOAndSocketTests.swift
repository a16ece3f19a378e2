import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/usage.md ("run"): `run --fifo` with `send`, `run --socket` with `call`.
@Suite("FIFO and socket modes", .ownThreads)
struct FIFOAndSocketTests {
    // MARK: FIFO

    @Test("FIFO: concurrent senders, a writer reopening, every record; SIGTERM ends with 0", .scaledTimeLimit(minutes: 1))
    func fifo() throws {
        let host = try HostFixture(["Calculator"])
        let fifo = host.scratch.file("requests.fifo")
        let child = try host.start(["--fifo", fifo, "--output", "jsonl"], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "the host never opened \(fifo); stderr: \(child.stderr)")

        var info = stat()
        #expect(lstat(fifo, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFIFO)
        #expect(info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")

        // Two writers at the same time, several URLs each.
        let first = (0..<20).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1000" }
        let second = (0..<20).map { "calc://x-callback-url/add?lhs=\($0)&rhs=2000" }
        let senders = try [first, second].map { try ChildProcess(["send", "--fifo", fifo] + $0) }
        for sender in senders {
            #expect(sender.waitForExit(timeout: 10) == .exited(0), "send: \(sender.stderr)")
        }
        #expect(child.waitForStdoutLines(40, timeout: 10), "records so far: \(child.stdoutLines.count)")

        // Every writer closed; a new one opens, writes and closes again.
        let third = try xcallback(["send", "--fifo", fifo, "calc://x-callback-url/add?lhs=1&rhs=3000"])
        #expect(third.status == .exited(0), "send: \(third.stderr)")
        let descriptor = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(descriptor >= 0)
        if descriptor >= 0 {
            let line = Array("calc://x-callback-url/add?lhs=2&rhs=3000\n# comment\n\n".utf8)
            #expect(write(descriptor, line, line.count) == line.count)
            close(descriptor)
        }
        #expect(child.waitForStdoutLines(42, timeout: 10), "records so far: \(child.stdoutLines.count)")

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == 42)
        let results = records.compactMap { $0.params["result"] }.sorted()
        let expected = ((0..<20).map { "\($0 + 1000)" } + (0..<20).map { "\($0 + 2000)" } + ["3001", "3002"]).sorted()
        #expect(results == expected)
        // No torn lines: every input is one of the URLs sent.
        let sent = Set(first + second + ["calc://x-callback-url/add?lhs=1&rhs=3000", "calc://x-callback-url/add?lhs=2&rhs=3000"])
        #expect(records.allSatisfy { sent.contains($0.input ?? "") })
    }

    @Test("FIFO: an existing FIFO is used; SIGINT also ends the host, with 130 (interrupted)", .scaledTimeLimit(minutes: 1))
    func existingFIFOAndSIGINT() throws {
        let host = try HostFixture(["Calculator"])
        let fifo = host.scratch.file("mine.fifo")
        try #require(mkfifo(fifo, 0o600) == 0)
        let child = try host.start(["--fifo", fifo], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")
        let sent = try xcallback(["send", "--fifo", fifo, "calc://x-callback-url/multiply?lhs=6&rhs=7"])
        #expect(sent.status == .exited(0))
        #expect(child.waitForStdoutLines(1, timeout: 10))
        child.send(signal: SIGINT)
        #expect(child.waitForExit(timeout: 10) == .exited(130))
        #expect(child.stdoutLines == ["success?result=42"])
    }

    @Test("FIFO: a path that exists and is not a FIFO is refused")
    func fifoPathNotAFIFO() throws {
        let host = try HostFixture(["Calculator"])
        let path = host.scratch.file("regular")
        try Data("x".utf8).write(to: URL(fileURLWithPath: path))
        let result = try xcallback(host.runPrefix + ["--fifo", path])
        #expect(result.status != .exited(0))
        #expect(result.status != .signaled(SIGKILL))
        #expect(result.stderr.contains(path), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        // Still a regular file.
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
    }

    @Test("send: no host reading, no such FIFO, or a URL too long for one atomic write → non-zero and a clear message")
    func sendFailures() throws {
        let scratch = try Scratch()
        let fifo = scratch.file("nobody.fifo")
        try #require(mkfifo(fifo, 0o600) == 0)

        let noReader = try xcallback(["send", "--fifo", fifo, "calc://x-callback-url/add?lhs=1&rhs=2"], timeout: 10)
        #expect(noReader.status != .exited(0))
        #expect(noReader.status != .signaled(SIGKILL), "send blocked with no reader")
        #expect(noReader.stderr.contains("no host is reading"), "stderr: \(noReader.stderr)")
        #expect(noReader.stderr.contains(fifo))

        let missing = try xcallback(["send", "--fifo", scratch.file("missing.fifo"), "calc://x-callback-url/add"], timeout: 10)
        #expect(missing.status != .exited(0))
        #expect(missing.stderr.contains("missing.fifo"), "stderr: \(missing.stderr)")

        let long = "calc://x-callback-url/add?lhs=1&rhs=2&pad=" + String(repeating: "p", count: 5_000)
        let tooLong = try xcallback(["send", "--fifo", fifo, long], timeout: 10)
        #expect(tooLong.status != .exited(0))
        #expect(tooLong.stderr.contains("atomic"), "stderr: \(tooLong.stderr)")
    }

    // MARK: socket

    @Test("socket: call prints the record; exit 0 on success, non-zero on error and cancel", .scaledTimeLimit(minutes: 1))
    func socketCall() throws {
        let host = try HostFixture(["Calculator", "Faulty"])
        let socketPath = host.scratch.file("host.sock")
        let child = try host.start(["--socket", socketPath], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        let success = try xcallback(["call", "--socket", socketPath, "calc://x-callback-url/add?lhs=2&rhs=4.2"])
        #expect(success.status == .exited(0))
        #expect(success.lines == ["success?result=6.2"])

        let withCallback = try xcallback(["call", "--socket", socketPath,
                                          "calc://x-callback-url/add?lhs=1&rhs=2&x-success=app://ok&x-error=app://ok"])
        #expect(withCallback.status == .exited(0))
        #expect(withCallback.lines == ["app://ok?result=3"])

        let error = try xcallback(["call", "--socket", socketPath, "calc://x-callback-url/divide?lhs=1&rhs=0"])
        #expect(error.status != .exited(0))
        #expect(error.status != .signaled(SIGKILL))
        #expect(error.lines == [OutcomeTests.divideByZero])

        let errorToCallback = try xcallback(["call", "--socket", socketPath,
                                             "faulty://x-callback-url/fail?x-success=app://same&x-error=app://same"])
        #expect(errorToCallback.status != .exited(0))
        #expect(errorToCallback.lines.first?.hasPrefix("app://same?errorCode=Failed&") == true)

        let notFound = try xcallback(["call", "--socket", socketPath, "calc://x-callback-url/nope"])
        #expect(notFound.status != .exited(0))
        #expect(notFound.lines.first?.hasPrefix("error?errorCode=NotFoundAction&") == true)

        let cancel = try xcallback(["call", "--socket", socketPath, "faulty://x-callback-url/cancel"])
        #expect(cancel.status != .exited(0))
        #expect(cancel.lines == ["cancel"])

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        #expect(child.stdout.isEmpty, "socket records belong to their connection, not stdout")
    }

    @Test("socket: each connection gets its own records on the same connection", .scaledTimeLimit(minutes: 1))
    func socketConnections() throws {
        let host = try HostFixture(["Calculator", "Faulty"])
        let socketPath = host.scratch.file("s")
        let child = try host.start(["--socket", socketPath, "--output", "jsonl"], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        // Two connections at once, one slow request in the first.
        let lists = [
            ["faulty://x-callback-url/sleep?ms=300", "calc://x-callback-url/add?lhs=1&rhs=1", "# comment", "", "bad line"],
            (0..<10).map { "calc://x-callback-url/add?lhs=\($0)&rhs=100" },
        ]
        let answers = try concurrently(lists) { try exchangeOverSocket(socketPath, lines: $0) }
        let first = try answers[0].map { try Record(jsonLine: $0) }
        let second = try answers[1].map { try Record(jsonLine: $0) }
        #expect(first.count == 3)
        #expect(Set(first.compactMap(\.input)) == ["faulty://x-callback-url/sleep?ms=300", "calc://x-callback-url/add?lhs=1&rhs=1", "bad line"])
        #expect(second.count == 10)
        #expect(Set(second.compactMap { $0.params["result"] }) == Set((0..<10).map { "\($0 + 100)" }))

        let call = try xcallback(["call", "--socket", socketPath, "calc://x-callback-url/add?lhs=1&rhs=2"])
        #expect(call.status == .exited(0))
        #expect(try call.lines.map { try Record(jsonLine: $0) }.first?.params == ["result": "3"])
        let failing = try xcallback(["call", "--socket", socketPath, "faulty://x-callback-url/fail"])
        #expect(failing.status != .exited(0))
        #expect(try failing.lines.map { try Record(jsonLine: $0) }.first?.errorCode == "Failed")

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
    }

    @Test("socket: records are flushed before the client ends its side; clients that leave early do no harm",
          .scaledTimeLimit(minutes: 1))
    func socketStreamingAndEarlyClose() throws {
        let host = try HostFixture(["Calculator", "Faulty"])
        let socketPath = host.scratch.file("s")
        let child = try host.start(["--socket", socketPath], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        // One line, write side left open: the record must still come.
        let descriptor = try #require(connectUnixSocket(socketPath))
        let line = Array("calc://x-callback-url/add?lhs=20&rhs=22\n".utf8)
        #expect(send(descriptor, line, line.count, Int32(MSG_NOSIGNAL)) == line.count)
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 5_000) == 1, "no record within 5 s while the connection stays open")
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(descriptor, &buffer, buffer.count)
        #expect(String(decoding: buffer[0..<max(0, count)], as: UTF8.self) == "success?result=42\n")
        close(descriptor)

        // Clients that go away before their (slow) record is ready.
        for shutFirst in [false, true] {
            let early = try #require(connectUnixSocket(socketPath))
            let slow = Array("faulty://x-callback-url/sleep?ms=200\nfaulty://x-callback-url/sleep?ms=100\n".utf8)
            #expect(send(early, slow, slow.count, Int32(MSG_NOSIGNAL)) == slow.count)
            if shutFirst { shutdown(early, Int32(SHUT_WR)) }
            close(early)
        }
        // A request answered after them proves the host outlived the writes
        // to the vanished clients (the sleeps end at 100-200 ms).
        let later = try xcallback(["call", "--socket", socketPath, "faulty://x-callback-url/sleep?ms=400"])
        #expect(later.status == .exited(0))
        #expect(later.lines == ["success?slept=400"])
        #expect(!child.hasExited)

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        #expect(!looksLikeACrash(child.stderr))
    }

    @Test("call with no host listening → non-zero and a clear message")
    func callWithoutHost() throws {
        let scratch = try Scratch()
        let missing = try xcallback(["call", "--socket", scratch.file("none.sock"), "calc://x-callback-url/add?lhs=1&rhs=2"], timeout: 10)
        #expect(missing.status != .exited(0))
        #expect(missing.status != .signaled(SIGKILL))
        #expect(missing.stdout.isEmpty)
        #expect(missing.stderr.contains("no host is listening"), "stderr: \(missing.stderr)")
        #expect(missing.stderr.contains("none.sock"))

        // A stale socket file with nobody behind it.
        let stale = scratch.file("stale.sock")
        close(try unixSocket(boundTo: stale, listening: false))
        let staleCall = try xcallback(["call", "--socket", stale, "calc://x-callback-url/add?lhs=1&rhs=2"], timeout: 10)
        #expect(staleCall.status != .exited(0))
        #expect(staleCall.status != .signaled(SIGKILL))
        #expect(staleCall.stderr.contains("no host is listening"), "stderr: \(staleCall.stderr)")
    }
}

/// Runs `body` for each element on its own thread, at the same time, and
/// returns the results in order (throws past `timeout` seconds).
func concurrently<Element: Sendable, Result: Sendable>(
    _ elements: [Element], timeout: Double = 30, _ body: @escaping @Sendable (Element) throws -> Result
) throws -> [Result] {
    let box = ResultsBox<Result>(count: elements.count)
    for (index, element) in elements.enumerated() {
        box.group.enter()
        Thread.detachNewThread {
            let result = Swift.Result { try body(element) }
            box.lock.lock()
            box.results[index] = result
            box.lock.unlock()
            box.group.leave()
        }
    }
    guard box.group.wait(timeout: .now() + timeout) == .success else {
        throw HarnessError("concurrent work did not finish in \(timeout) s")
    }
    return try box.results.map { try $0!.get() }
}

private final class ResultsBox<Value>: @unchecked Sendable {
    var results: [Result<Value, any Error>?]
    let group = DispatchGroup()
    let lock = NSLock()
    init(count: Int) { results = Array(repeating: nil, count: count) }
}
