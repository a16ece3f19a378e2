import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 9, concurrency: many writers on one FIFO and many socket clients at
/// once. Lines never interleave (FIFO writes up to PIPE_BUF are atomic) and
/// records never cross connections.
///
/// `XCALLBACK_STRESS_SCALE=N` multiplies the request counts by N (default 1,
/// a few seconds in all; see docs/reliability.md):
///
///     XCALLBACK_STRESS_SCALE=50 swift test --filter ConcurrencyTests
@Suite("Concurrency: FIFO writers and socket clients", .ownThreads)
struct ConcurrencyTests {
    static func scale() throws -> Int { try environmentInteger("XCALLBACK_STRESS_SCALE", default: 1) }

    // MARK: FIFO

    static let fifoWriters = 8

    /// Writer `writer`'s line `sequence` (with its LF): an id the record
    /// echoes (`text=w3-17` → `result=w3-17=20`); every 16th line padded to
    /// exactly PIPE_BUF bytes, the most one atomic write carries.
    static func fifoLine(writer: Int, sequence: Int) -> [UInt8] {
        var line = Array("calc://x-callback-url/add?lhs=\(writer)&rhs=\(sequence)&text=w\(writer)-\(sequence)".utf8)
        if sequence % 16 == 0 {
            line += Array("&pad=".utf8)
            line += Array(repeating: UInt8(ascii: "p"), count: Int(PIPE_BUF) - 1 - line.count)
        }
        return line + [10]
    }

    /// Whole lines grouped into writes of at most PIPE_BUF bytes.
    static func atomicWrites(_ lines: [[UInt8]]) -> [[UInt8]] {
        var writes: [[UInt8]] = []
        var current: [UInt8] = []
        for line in lines {
            if current.count + line.count > Int(PIPE_BUF) {
                writes.append(current)
                current = []
            }
            current += line
        }
        if !current.isEmpty { writes.append(current) }
        return writes
    }

    @Test("FIFO: 8 writers at once, atomic writes up to PIPE_BUF: one record per line, none torn or lost",
          .scaledTimeLimit(minutes: 5), arguments: ["none", "process"])
    func fifoWriters(isolation: String) throws {
        let perWriter = 250 * (try Self.scale())
        let host = try HostFixture(["Calculator"], isolation: isolation)
        let fifo = host.scratch.file("requests.fifo")
        let child = try host.start(["--fifo", fifo, "--output", "jsonl"], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "the host never opened \(fifo); stderr: \(child.stderr)")

        let lines = (0..<Self.fifoWriters).map { writer in
            (0..<perWriter).map { Self.fifoLine(writer: writer, sequence: $0) }
        }
        // Each writer reopens the FIFO now and then: the host reads on
        // across writers coming and going.
        let writesPerOpen = 40
        let timeout = 30 * Double(try Self.scale())
        let failures = try concurrently(lines, timeout: timeout) { lines -> [String] in
            var failures: [String] = []
            var descriptor: Int32 = -1
            for (index, bytes) in Self.atomicWrites(lines).enumerated() {
                if index % writesPerOpen == 0 {
                    if descriptor >= 0 { close(descriptor) }
                    descriptor = open(fifo, O_WRONLY | O_CLOEXEC)
                    guard descriptor >= 0 else { return ["open: \(String(cString: strerror(errno)))"] }
                }
                let written = Glibc.write(descriptor, bytes, bytes.count)
                if written != bytes.count { failures.append("write of \(bytes.count) bytes returned \(written)") }
            }
            if descriptor >= 0 { close(descriptor) }
            return failures
        }
        #expect(failures.flatMap { $0 }.isEmpty, "\(failures.flatMap { $0 }.prefix(5))")

        let total = Self.fifoWriters * perWriter
        #expect(child.waitForStdoutLines(total, timeout: timeout),
                "records: \(child.stdoutLines.count) of \(total); stderr: \(child.stderr.suffix(1000))")
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr.suffix(1000))")

        var expected: [String: String] = [:]  // input → result
        for writer in 0..<Self.fifoWriters {
            for sequence in 0..<perWriter {
                let line = Self.fifoLine(writer: writer, sequence: sequence)
                expected[String(decoding: line.dropLast(), as: UTF8.self)] = "w\(writer)-\(sequence)=\(writer + sequence)"
            }
        }
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == total)
        var seen: [String: Int] = [:]
        var problems: [String] = []
        for record in records {
            let input = record.input ?? ""
            seen[input, default: 0] += 1
            guard let result = expected[input] else {
                problems.append("a record for a line never sent (torn?): \(input.prefix(100))")
                continue
            }
            if record.params != ["result": result] { problems.append("\(input.prefix(100)): \(record)") }
        }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(5))")
        #expect(seen.count == expected.count, "\(expected.count - seen.count) lines never answered")
        #expect(seen.values.allSatisfy { $0 == 1 }, "some lines answered more than once")
    }

    // MARK: socket

    static let socketClients = 32

    static func socketLines(client: Int, count: Int) -> [String] {
        (0..<count).map { "calc://x-callback-url/add?lhs=\(client)&rhs=\($0)&text=c\(client)-\($0)" }
    }

    /// Checks that `records` answer exactly `lines` of client `client`, each once.
    static func problems(client: Int, lines: [String], records: [Record]) -> [String] {
        var problems: [String] = []
        if records.count != lines.count { problems.append("client \(client): \(records.count) records for \(lines.count) lines") }
        var expected: [String: String] = [:]
        for (sequence, line) in lines.enumerated() { expected[line] = "c\(client)-\(sequence)=\(client + sequence)" }
        var seen = Set<String>()
        for record in records {
            let input = record.input ?? ""
            guard let result = expected[input] else {
                problems.append("client \(client) got a record that is not its own: \(input.prefix(100))")
                continue
            }
            if !seen.insert(input).inserted { problems.append("client \(client) got \(input) twice") }
            if record.params != ["result": result] { problems.append("client \(client): \(record)") }
        }
        return problems
    }

    @Test("socket: 32 clients at once each get exactly their own records", .scaledTimeLimit(minutes: 5),
          arguments: ["none", "process"])
    func socketClients(isolation: String) throws {
        let perClient = 50 * (try Self.scale())
        let host = try HostFixture(["Calculator"], isolation: isolation)
        let socketPath = host.scratch.file("s")
        let child = try host.start(["--socket", socketPath, "--output", "jsonl"], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        let timeout = 30 * Double(try Self.scale())
        let answers = try concurrently(Array(0..<Self.socketClients), timeout: timeout + 10) { client -> [String] in
            let lines = Self.socketLines(client: client, count: perClient)
            let received = try SocketExchange(path: socketPath).run(Array(lines.map { $0 + "\n" }.joined().utf8),
                                                                    readWhileSending: true, timeout: timeout)
            let records = try ChildProcess.lines(String(decoding: received, as: UTF8.self)).map { try Record(jsonLine: $0) }
            return Self.problems(client: client, lines: lines, records: records)
        }
        let problems = answers.flatMap { $0 }
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(5))")

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr.suffix(1000))")
        #expect(child.stdout.isEmpty, "socket records belong to their connection, not stdout")
    }

    @Test("socket: a client may send 4096 requests before it reads anything, however long their records",
          .scaledTimeLimit(minutes: 2), arguments: ["none", "process"])
    func sendEverythingThenRead(isolation: String) throws {
        let count = 4096  // InputLoop.maxInFlight, the documented window
        let host = try HostFixture(["Calculator"], isolation: isolation)
        let socketPath = host.scratch.file("s")
        // jsonl records echo their ~1 KiB input: about 4 MiB of records, far
        // more than the socket buffers hold, wait for the client to read.
        let child = try host.start(["--socket", socketPath, "--output", "jsonl"], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        let padding = String(repeating: "p", count: 1_000)
        let lines = (0..<count).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1&pad=\(padding)" }
        let received = try SocketExchange(path: socketPath).run(Array(lines.map { $0 + "\n" }.joined().utf8),
                                                                readWhileSending: false, timeout: 30)
        let records = try ChildProcess.lines(String(decoding: received, as: UTF8.self)).map { try Record(jsonLine: $0) }
        #expect(records.count == count)
        #expect(Set(records.compactMap(\.input)) == Set(lines))
        let results = Dictionary(uniqueKeysWithValues: lines.enumerated().map { ($1, "\($0 + 1)") })
        let wrong = records.filter { record in
            guard let result = record.input.flatMap({ results[$0] }) else { return true }
            return record.params != ["result": result]
        }
        #expect(wrong.isEmpty, "\(wrong.count) wrong records, first: \(wrong.prefix(2))")

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr.suffix(1000))")
    }

    @Test("socket: a client that stops reading its records stalls no other connection", .scaledTimeLimit(minutes: 2),
          arguments: ["none", "process"])
    func clientNotReading(isolation: String) throws {
        let host = try HostFixture(["Calculator"], isolation: isolation)
        let socketPath = host.scratch.file("s")
        // jsonl records are long (they echo the input): they back up fast.
        let child = try host.start(["--socket", socketPath, "--output", "jsonl"], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        let lines = Self.socketLines(client: 0, count: 30_000)
        let payload = Array(lines.map { $0 + "\n" }.joined().utf8)
        let hog = try SocketExchange(path: socketPath)
        // Sends without reading until the host stops taking input.
        let sent = try hog.sendUntilStalled(payload, stallAfter: 0.5, timeout: 30)
        #expect(sent < payload.count, "the host read all \(payload.count) bytes: the client never backed up")

        // Another connection is answered while the first is stuck.
        let call = try xcallback(["call", "--socket", socketPath, "calc://x-callback-url/add?lhs=1&rhs=2"], timeout: 10)
        #expect(call.status == .exited(0), "call: \(call.stderr)")
        #expect(try call.lines.map { try Record(jsonLine: $0) }.first?.params == ["result": "3"])
        let others = try SocketExchange(path: socketPath).run(
            Array(Self.socketLines(client: 1, count: 100).map { $0 + "\n" }.joined().utf8), readWhileSending: true, timeout: 10)
        let otherRecords = try ChildProcess.lines(String(decoding: others, as: UTF8.self)).map { try Record(jsonLine: $0) }
        let otherProblems = Self.problems(client: 1, lines: Self.socketLines(client: 1, count: 100), records: otherRecords)
        #expect(otherProblems.isEmpty, "\(otherProblems.prefix(5))")

        // The stuck client reads at last and gets every one of its records.
        let received = try hog.run(payload, from: sent, readWhileSending: true, timeout: 60)
        let records = try ChildProcess.lines(String(decoding: received, as: UTF8.self)).map { try Record(jsonLine: $0) }
        let problems = Self.problems(client: 0, lines: lines, records: records)
        #expect(problems.isEmpty, "\(problems.count) problems, first: \(problems.prefix(5))")

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr.suffix(1000))")
    }
}

extension ConcurrencyTests {
    @Test("socket: SIGTERM waits for a client that never reads only the grace period, then exits 0",
          .scaledTimeLimit(minutes: 1))
    func stopWithClientNotReading() throws {
        let host = try HostFixture(["Calculator"], isolation: "process")
        let socketPath = host.scratch.file("s")
        let child = try host.start(["--socket", socketPath, "--output", "jsonl", "--grace-period", "1"], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        let payload = Array(Self.socketLines(client: 0, count: 30_000).map { $0 + "\n" }.joined().utf8)
        let hog = try SocketExchange(path: socketPath)
        let sent = try hog.sendUntilStalled(payload, stallAfter: 0.5, timeout: 30)
        try #require(sent < payload.count, "the client never backed up")

        let start = Date()
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 15) == .exited(0), "stderr: \(child.stderr.suffix(1000))")
        let seconds = Date().timeIntervalSince(start)
        #expect(seconds < 10, "the host took \(seconds) s to stop")
        #expect(!looksLikeACrash(child.stderr))
        withExtendedLifetime(hog) {}
    }
}

/// One connection to a `run --socket` host, driven with non-blocking sends
/// and bounded polls, so a host that stops reading fails the test instead of
/// hanging it.
final class SocketExchange: @unchecked Sendable {
    private let descriptor: Int32
    private let path: String

    init(path: String) throws {
        guard let descriptor = connectUnixSocket(path) else { throw HarnessError("cannot connect to \(path)") }
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Sends `payload[offset...]`, without blocking; the bytes sent, or nil
    /// when the socket takes none now.
    private func sendSome(_ payload: [UInt8], from offset: Int) throws -> Int? {
        let count = payload.withUnsafeBytes {
            send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        }
        if count >= 0 { return count }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return nil }
        throw HarnessError("send to \(path): \(String(cString: strerror(errno)))")
    }

    /// Sends as much of `payload` as the host takes, reading nothing, until
    /// no byte goes out for `stallAfter` seconds; returns the bytes sent.
    func sendUntilStalled(_ payload: [UInt8], stallAfter: Double, timeout: Double) throws -> Int {
        var sent = 0
        let deadline = Date(timeIntervalSinceNow: timeout)
        while sent < payload.count, Date() < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, Int32(stallAfter * 1000))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return sent }
            sent += try sendSome(payload, from: sent) ?? 0
        }
        return sent
    }

    /// Sends `payload[offset...]`, shuts down the write side, and returns
    /// every byte the host answers until it closes the connection. With
    /// `readWhileSending` it reads as it sends, as a client should; without,
    /// it reads only once everything is sent (and fails if the host stops
    /// taking input first).
    func run(_ payload: [UInt8], from offset: Int = 0, readWhileSending: Bool, timeout: Double) throws -> [UInt8] {
        var sent = offset
        var writing = true
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            if writing && sent == payload.count {
                shutdown(descriptor, Int32(SHUT_WR))
                writing = false
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                throw HarnessError("""
                    \(path): not done within \(timeout) s: sent \(sent) of \(payload.count) bytes, \
                    received \(received.count)
                    """)
            }
            let reading = !writing || readWhileSending
            var events: Int16 = 0
            if writing { events |= Int16(POLLOUT) }
            if reading { events |= Int16(POLLIN) }
            var poller = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            if writing && poller.revents & Int16(POLLOUT) != 0 {
                sent += try sendSome(payload, from: sent) ?? 0
            }
            if reading && poller.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let count = read(descriptor, &chunk, chunk.count)
                if count > 0 {
                    received += chunk[0..<count]
                } else if count == 0 {
                    if writing { throw HarnessError("\(path) closed the connection after \(sent) bytes sent") }
                    return received
                } else if errno != EINTR && errno != EAGAIN {
                    throw HarnessError("read from \(path): \(String(cString: strerror(errno)))")
                }
            } else if !reading && poller.revents & Int16(POLLHUP | POLLERR) != 0 {
                throw HarnessError("\(path) hung up after \(sent) bytes sent")
            }
        }
    }
}
