import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `xcallback top` on a running host's metrics: in a pseudo-terminal
/// (util-linux `script`) it draws, refreshes, sorts and quits on `q`; on a
/// pipe it prints plain lines.
@Suite("top: a live view of a host's metrics", .ownThreads)
struct TopTests {
    static let script = "/usr/bin/script"

    /// The frames drawn so far (each starts by clearing the screen).
    static func frames(_ output: String) -> [String] {
        output.components(separatedBy: "\u{1B}[H\u{1B}[2J").dropFirst().map { $0 }
    }

    /// The TOTAL column of `plugin`'s row in a frame.
    static func total(of plugin: String, in frame: String) -> Int? {
        for line in frame.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let fields = line.split(separator: " ")
            if fields.first.map(String.init) == plugin, fields.count > 2 { return Int(fields[2]) }
        }
        return nil
    }

    @Test("in a terminal: draws a row per plug-in, refreshes, sorts on a key, quits on q and restores the screen",
          .requires(.script),
          .scaledTimeLimit(minutes: 1))
    func terminal() throws {
        let session = try MetricsTests.Session()
        try session.ask("calc://x-callback-url/add?lhs=1&rhs=2")
        try session.ask("faulty://x-callback-url/fail")
        let command = "\(Products.xcallback) top --interval 0.2 \(session.metrics)"
        let top = try ChildProcess(["-qfec", command, "/dev/null"], executable: Self.script, stdin: .pipe)
        // It draws: a header, and a row per plug-in.
        try #require(top.waitForStdout(timeout: TestTiming.scaled(10)) { output in
            Self.frames(output).last.map { $0.contains("sorted by rate") && Self.total(of: "calculator", in: $0) == 1 } ?? false
        }, "stdout: \(top.stdout) stderr: \(top.stderr)")
        #expect(top.stdout.contains("\u{1B}[?1049h"), "the alternate screen")
        let first = try #require(Self.frames(top.stdout).last)
        #expect(first.contains("PLUG-IN"))
        #expect(first.contains("faulty"))
        // It refreshes: a request made now shows in a later frame.
        try session.ask("calc://x-callback-url/add?lhs=2&rhs=2")
        #expect(top.waitForStdout(timeout: TestTiming.scaled(10)) { output in
            Self.frames(output).last.map { Self.total(of: "calculator", in: $0) == 2 } ?? false
        }, "stdout: \(top.stdout)")
        // It sorts: by errors, faulty (1 error) comes first.
        #expect(top.write("e"))
        #expect(top.waitForStdout(timeout: TestTiming.scaled(10)) { output in
            guard let frame = Self.frames(output).last, frame.contains("sorted by errors"),
                  let faulty = frame.range(of: "\nfaulty"), let calculator = frame.range(of: "\ncalculator") else { return false }
            return faulty.lowerBound < calculator.lowerBound
        }, "stdout: \(top.stdout)")
        #expect(top.write("n"))
        #expect(top.waitForStdout(timeout: TestTiming.scaled(10)) { Self.frames($0).last?.contains("sorted by name") == true })
        // It quits on q, leaving the terminal as it was.
        #expect(top.write("q"))
        #expect(top.waitForExit(timeout: TestTiming.scaled(10)) == .exited(0), "stderr: \(top.stderr)")
        #expect(top.stdout.hasSuffix("\u{1B}[?25h\u{1B}[?1049l") || top.stdout.contains("\u{1B}[?1049l"))
        session.finish()
    }

    @Test("in a terminal: Ctrl-C is a key, as docs/observability.md says: it quits, exit 0, the screen given back",
          .requires(.script),
          .scaledTimeLimit(minutes: 1))
    func terminalControlC() throws {
        let session = try MetricsTests.Session()
        try session.ask("calc://x-callback-url/add?lhs=1&rhs=2")
        let command = "\(Products.xcallback) top --interval 0.2 \(session.metrics)"
        let top = try ChildProcess(["-qfec", command, "/dev/null"], executable: Self.script, stdin: .pipe)
        try #require(top.waitForStdout(timeout: TestTiming.scaled(10)) { output in
            Self.frames(output).last.map { Self.total(of: "calculator", in: $0) == 1 } ?? false
        }, "stdout: \(top.stdout) stderr: \(top.stderr)")
        #expect(top.write("\u{03}"))
        #expect(top.waitForExit(timeout: TestTiming.scaled(10)) == .exited(0), "stderr: \(top.stderr)")
        #expect(top.stdout.contains("\u{1B}[?25h\u{1B}[?1049l"), "the screen given back")
        let page = try String(contentsOfFile: TestPostgres.repository + "/docs/observability.md", encoding: .utf8)
        #expect(page.contains("or Ctrl-C quits and gives the terminal back as it was, exit 0"))
        session.finish()
    }

    @Test("on a pipe: plain lines, one per plug-in a refresh, and --count ends it", .scaledTimeLimit(minutes: 1))
    func plainLines() throws {
        let session = try MetricsTests.Session()
        try session.ask("calc://x-callback-url/add?lhs=1&rhs=2")
        let result = try xcallback(["top", "--count", "2", "--interval", "0.1", session.metrics], timeout: TestTiming.scaled(20))
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let lines = ChildProcess.lines(result.stdout)
        #expect(lines.filter { $0.contains(" plugin=calculator ") }.count == 2, "\(result.stdout)")
        #expect(lines.contains { $0.contains(" plugin=calculator ") && $0.contains(" total=1 ") && $0.contains(" state=ok ") })
        #expect(!result.stdout.contains("\u{1B}["))
        session.finish()
        // No host: a message, and a failure.
        let missing = try xcallback(["top", "--count", "1", session.metrics], timeout: TestTiming.scaled(20))
        #expect(missing.status == .exited(1))
        #expect(missing.stderr.contains("cannot connect"), "\(missing.stderr)")
    }

    /// How many refreshes of plain lines `output` holds (one calculator line each).
    static func refreshes(_ output: String) -> Int {
        ChildProcess.lines(output).filter { $0.contains(" plugin=calculator ") }.count
    }

    @Test("on a pipe, until told: a stdin of /dev/null is not its end, a stdin pipe's end is, and SIGINT ends it by the signal",
          .scaledTimeLimit(minutes: 1))
    func plainLinesEnd() throws {
        let session = try MetricsTests.Session()
        try session.ask("calc://x-callback-url/add?lhs=1&rhs=2")
        let arguments = ["top", "--interval", "0.1", session.metrics]
        // A background job's stdin: it goes on refreshing.
        let detached = try ChildProcess(arguments, stdin: .null)
        #expect(detached.waitForStdout(timeout: TestTiming.scaled(10)) { Self.refreshes($0) >= 3 }, "stderr: \(detached.stderr)")
        #expect(!detached.hasExited)
        detached.send(signal: SIGINT)
        #expect(detached.waitForExit(timeout: TestTiming.scaled(10)) == .signaled(SIGINT))
        // Whoever started it closes its stdin: it ends, exit 0.
        let piped = try ChildProcess(arguments, stdin: .pipe)
        #expect(piped.waitForStdout(timeout: TestTiming.scaled(10)) { Self.refreshes($0) >= 1 }, "stderr: \(piped.stderr)")
        #expect(piped.write("q\n"), "bytes on a pipe are no keys")
        #expect(piped.waitForStdout(timeout: TestTiming.scaled(10)) { Self.refreshes($0) >= 3 })
        piped.closeInput()
        #expect(piped.waitForExit(timeout: TestTiming.scaled(10)) == .exited(0), "stderr: \(piped.stderr)")
        session.finish()
    }

    @Test("in a terminal with no keyboard (stdin not a terminal): Ctrl-C gives the screen back, then ends it by SIGINT",
          .requires(.script),
          .scaledTimeLimit(minutes: 1))
    func terminalWithoutKeys() throws {
        let session = try MetricsTests.Session()
        try session.ask("calc://x-callback-url/add?lhs=1&rhs=2")
        let command = "\(Products.xcallback) top --interval 0.2 \(session.metrics) </dev/null"
        let top = try ChildProcess(["-qfec", command, "/dev/null"], executable: Self.script, stdin: .pipe)
        try #require(top.waitForStdout(timeout: TestTiming.scaled(10)) { output in
            Self.frames(output).last.map { Self.total(of: "calculator", in: $0) == 1 } ?? false
        }, "stdout: \(top.stdout) stderr: \(top.stderr)")
        // The terminal's own Ctrl-C: SIGINT to top, which is not reading keys.
        #expect(top.write("\u{03}"))
        #expect(top.waitForExit(timeout: TestTiming.scaled(10)) == .exited(128 + SIGINT), "stderr: \(top.stderr)")
        #expect(top.stdout.contains("\u{1B}[?25h\u{1B}[?1049l"), "the screen given back")
        session.finish()
    }
}
