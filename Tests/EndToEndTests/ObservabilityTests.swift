import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Diagnostics of `run`: `--log-format json`, the outcome summary line at
/// exit and on SIGUSR1, and the progress line on a terminal.
@Suite("Observability: log format, summary, SIGUSR1, progress", .ownThreads)
struct ObservabilityTests {
    static let summaryPrefix = "xcallback: processed "

    /// The stderr lines that are summary lines (text format).
    static func summaryLines(_ stderr: String) -> [String] {
        ChildProcess.lines(stderr).filter { $0.hasPrefix(summaryPrefix) }
    }

    static func jsonObject(_ line: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw HarnessError("not a JSON object: \(line)")
        }
        return object
    }

    // MARK: log format

    @Test("--log-format json: every stderr line is a JSON log object; the summary is the last, with its numbers",
          arguments: ["none", "process"])
    func jsonLogFormat(isolation: String) throws {
        let host = try HostFixture(["Calculator", "Faulty"], isolation: isolation)
        let bogus = try host.addBogusPlugin()
        let result = try host.run(["--log-level", "warning", "--log-format", "json", "-k"], lines: [
            "calc://x-callback-url/add?lhs=1&rhs=1",
            // The plug-in's second completion is logged where the plug-in
            // runs: in a worker, whose log lines must be JSON too.
            "faulty://x-callback-url/twice",
        ])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(result.lines.count == 2)
        let lines = ChildProcess.lines(result.stderr)
        let objects = try lines.map { try Self.jsonObject($0) }
        for object in objects {
            #expect(["time", "level", "label", "message", "metadata"].allSatisfy { object[$0] != nil }, "\(object)")
            let time = object["time"] as? String ?? ""
            #expect(time.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil, "\(time)")
            #expect(object["metadata"] is [String: Any])
        }
        #expect(objects.contains { $0["level"] as? String == "error" && ($0["message"] as? String ?? "").contains(bogus) },
                "stderr: \(result.stderr)")
        // A plug-in's misbehaviour names the plug-in, the request and its route.
        #expect(objects.contains { object in
            let message = object["message"] as? String ?? ""
            return object["level"] as? String == "warning" && message.contains("already completed")
                && message.contains("plug-in 'faulty' completed request ")
                && message.contains("(route faulty://x-callback-url/twice)")
        }, "stderr: \(result.stderr)")
        let summary = try #require(objects.last?["summary"] as? [String: Any], "stderr: \(result.stderr)")
        #expect(summary["processed"] as? Int == 2)
        #expect(summary["succeeded"] as? Int == 2)
        #expect(summary["failed"] as? Int == 0)
        #expect(summary["final"] as? Bool == true)
        #expect(objects.dropLast().allSatisfy { $0["summary"] == nil })
    }

    @Test("--log-format text (the default) keeps swift-log's line format; a bad value is refused")
    func textLogFormat() throws {
        let host = try HostFixture(["Calculator"])
        let bogus = try host.addBogusPlugin()
        let result = try host.run(["--log-format", "text"], lines: ["calc://x-callback-url/add?lhs=1&rhs=1"])
        #expect(result.status == .exited(0))
        let logLine = try #require(ChildProcess.lines(result.stderr).first { $0.contains(bogus) }, "stderr: \(result.stderr)")
        #expect(logLine.contains(" error xcallback: [XCallbackHost] "), "\(logLine)")
        let refused = try host.run(["--log-format", "xml"], lines: ["calc://x-callback-url/add?lhs=1&rhs=1"], timeout: 10)
        #expect(refused.status != .exited(0))
        #expect(refused.stdout.isEmpty)
    }

    // MARK: summary

    @Test("the summary at exit counts each outcome; crashed and timed out are part of failed", .scaledTimeLimit(minutes: 1))
    func summaryCounts() throws {
        let host = try HostFixture(["Calculator", "Faulty"], isolation: "process")
        let child = try host.start(["--timeout", "0.5"])
        // One at a time: a crash takes with it whatever else its worker had in flight.
        let requests = [
            "calc://x-callback-url/add?lhs=1&rhs=1",          // success
            "calc://x-callback-url/divide?lhs=1&rhs=0",       // plug-in error
            "faulty://x-callback-url/cancel",                 // cancel
            "faulty://x-callback-url/hang",                   // Timeout
            "faulty://x-callback-url/crash",                  // PluginCrashed
            "nope://x",                                       // NotFoundAction
        ]
        for (index, request) in requests.enumerated() {
            child.write(request + "\n")
            try #require(child.waitForStdoutLines(index + 1, timeout: 15), "no record for \(request); stderr: \(child.stderr)")
        }
        child.closeInput()
        #expect(child.waitForExit(timeout: 15) == .exited(0), "stderr: \(child.stderr)")
        #expect(Self.summaryLines(child.stderr) == [
            "xcallback: processed 6, succeeded 1, failed 4 (crashed 1, timed out 1), cancelled 1",
        ], "stderr: \(child.stderr)")
    }

    @Test("--no-summary: no summary line at exit")
    func noSummary() throws {
        let host = try HostFixture(["Calculator"])
        let lines = ["calc://x-callback-url/add?lhs=1&rhs=1"]
        let quiet = try host.run(["--no-summary"], lines: lines)
        #expect(quiet.status == .exited(0))
        #expect(quiet.stderr.isEmpty, "stderr: \(quiet.stderr)")
        let plain = try host.run(lines: lines)
        #expect(Self.summaryLines(plain.stderr) == [
            "xcallback: processed 1, succeeded 1, failed 0 (crashed 0, timed out 0), cancelled 0",
        ], "stderr: \(plain.stderr)")
    }

    @Test("SIGUSR1 prints the counts so far and the FIFO host keeps going; SIGTERM ends with the final summary",
          .scaledTimeLimit(minutes: 1), arguments: ["text", "json"])
    func sigusr1(format: String) throws {
        let host = try HostFixture(["Calculator"])
        let fifo = host.scratch.file("requests.fifo")
        let child = try host.start(["--fifo", fifo, "--log-format", format], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")
        func send(_ lines: [String]) throws {
            let descriptor = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(descriptor >= 0, "open \(fifo): \(String(cString: strerror(errno)))")
            defer { close(descriptor) }
            let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
            #expect(write(descriptor, bytes, bytes.count) == bytes.count)
        }

        try send(["calc://x-callback-url/add?lhs=1&rhs=1", "calc://x-callback-url/add?lhs=2&rhs=2"])
        try #require(child.waitForStdoutLines(2, timeout: 10), "stderr: \(child.stderr)")
        child.send(signal: SIGUSR1)
        let soFar = "processed 2, succeeded 2, failed 0 (crashed 0, timed out 0), cancelled 0"
        #expect(child.waitForStderr(containing: soFar, timeout: 10), "stderr: \(child.stderr)")
        #expect(!child.hasExited)

        try send(["nope://x"])
        try #require(child.waitForStdoutLines(3, timeout: 10), "SIGUSR1 must not stop the host; stderr: \(child.stderr)")
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        let final = "processed 3, succeeded 2, failed 1 (crashed 0, timed out 0), cancelled 0"
        if format == "text" {
            #expect(Self.summaryLines(child.stderr) == ["xcallback: " + soFar, "xcallback: " + final], "stderr: \(child.stderr)")
        } else {
            let summaries = try ChildProcess.lines(child.stderr).map { try Self.jsonObject($0) }
                .compactMap { object -> (String, Bool)? in
                    guard let summary = object["summary"] as? [String: Any] else { return nil }
                    return (object["message"] as? String ?? "", summary["final"] as? Bool ?? false)
                }
            #expect(summaries.map(\.0) == [soFar, final], "stderr: \(child.stderr)")
            #expect(summaries.map(\.1) == [false, true])
        }
    }

    // MARK: progress

    /// Requests that keep the host busy for a while (the sleep) after all
    /// the others are answered, so the progress line has time to show.
    static let slowInput = [
        "calc://x-callback-url/add?lhs=1&rhs=1", "calc://x-callback-url/add?lhs=2&rhs=2",
        "calc://x-callback-url/divide?lhs=1&rhs=0", "faulty://x-callback-url/sleep?ms=900",
    ]

    @Test("a file on stdin and stderr on a terminal: a progress line, erased before the summary", .scaledTimeLimit(minutes: 1))
    func progressOnATerminal() throws {
        let host = try HostFixture(["Calculator", "Faulty"])
        let input = host.scratch.file("requests.txt")
        try Data(Self.slowInput.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: input))

        let (master, terminal) = try PseudoTerminal.open()
        defer { close(master) }
        let child: ChildProcess
        do {
            defer { close(terminal) }
            child = try ChildProcess(host.runPrefix, stdin: .file(input), stderrDescriptor: terminal)
        }

        // Read the terminal until the summary arrives (the slave side closes
        // when the host exits: EIO), bounded.
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = Date(timeIntervalSinceNow: 20)
        while Date() < deadline {
            var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 500)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { if child.hasExited { break } else { continue } }
            let count = read(master, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        #expect(child.stdoutLines.count == 4)
        let screen = String(decoding: bytes, as: UTF8.self)
        let erase = "\r\u{1B}[K"
        // At least one progress line while the sleep is in flight: the other three are done.
        #expect(screen.contains(erase + "xcallback: 3 done, 100% read, "), "terminal: \(screen.debugDescription)")
        #expect(screen.contains(", 1 error"), "terminal: \(screen.debugDescription)")
        // Erased, then the summary on a clean line.
        #expect(screen.contains(erase + "xcallback: processed 4, succeeded 3, failed 1 (crashed 0, timed out 0), cancelled 0\r\n"),
                "terminal: \(screen.debugDescription)")
        #expect(screen.hasSuffix("cancelled 0\r\n"), "nothing after the summary: \(screen.debugDescription)")
    }

    @Test("a file on stdin with stderr a pipe: no progress line, only the summary")
    func noProgressOnAPipe() throws {
        let host = try HostFixture(["Calculator", "Faulty"])
        let input = host.scratch.file("requests.txt")
        try Data(Self.slowInput.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: input))
        let child = try ChildProcess(host.runPrefix, stdin: .file(input))
        #expect(child.waitForExit(timeout: 20) == .exited(0))
        #expect(child.stderr == "xcallback: processed 4, succeeded 3, failed 1 (crashed 0, timed out 0), cancelled 0\n",
                "stderr: \(child.stderr.debugDescription)")
    }
}

/// A pseudo-terminal pair, both ends close-on-exec. Glibc's module hides
/// grantpt, unlockpt and ptsname_r (they need _XOPEN_SOURCE/_GNU_SOURCE),
/// so they are looked up at run time, as the harness does for pipe2.
enum PseudoTerminal {
    private typealias DescriptorFunction = @convention(c) (Int32) -> Int32
    private typealias NameFunction = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32

    private static func function<T>(_ name: String, as type: T.Type) throws -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {  // RTLD_DEFAULT
            throw HarnessError("\(name) not found")
        }
        return unsafeBitCast(symbol, to: type)
    }

    /// (master, terminal): the test reads the master; the child writes to the terminal side.
    static func open() throws -> (master: Int32, terminal: Int32) {
        let master = Glibc.open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0 else { throw HarnessError("cannot open /dev/ptmx: \(String(cString: strerror(errno)))") }
        var name = [CChar](repeating: 0, count: 128)
        guard try function("grantpt", as: DescriptorFunction.self)(master) == 0,
              try function("unlockpt", as: DescriptorFunction.self)(master) == 0,
              try function("ptsname_r", as: NameFunction.self)(master, &name, name.count) == 0 else {
            close(master)
            throw HarnessError("cannot set up the pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let terminal = Glibc.open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else {
            close(master)
            throw HarnessError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        return (master, terminal)
    }
}
