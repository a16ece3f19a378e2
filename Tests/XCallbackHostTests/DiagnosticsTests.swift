import Foundation
import Logging
import Testing
@testable import XCallbackSystem
import XCallbackURL

@testable import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

/// A console writing into a pipe, and what reached the pipe so far.
private final class CapturedConsole {
    let console: DiagnosticConsole
    private let readEnd: Int32
    private let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TestFailure("pipe: \(String(cString: strerror(errno)))") }
        readEnd = ends[0]
        writeEnd = ends[1]
        _ = fcntl(readEnd, F_SETFL, O_NONBLOCK)
        console = DiagnosticConsole(descriptor: writeEnd)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Whether something arrives within `milliseconds`.
    func waitForData(milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, milliseconds) > 0
    }

    /// Everything written since the last call (writes are synchronous).
    func take() -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(readEnd, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

private func jsonObject(_ line: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
    guard let dictionary = object as? [String: Any] else { throw TestFailure("not a JSON object: \(line)") }
    return dictionary
}

private func hostError(_ code: String) -> Outcome {
    .error(code: code, message: "m", domain: "xcallback")
}

@Suite("Diagnostics: outcome tally, log formats, console, progress", .ownThreads)
struct DiagnosticsTests {
    @Test func tallyCountsEachOutcomeAndTheCrashAndTimeoutSubsets() {
        let tally = OutcomeTally()
        let outcomes: [Outcome] = [
            .success(), .success(), .cancel,
            hostError("PluginCrashed"), hostError("Timeout"), hostError("Timeout"), hostError("NotFoundAction"),
            // A plug-in's own codes are failures, never the host's crashes or timeouts.
            .error(code: "Timeout", message: "m", domain: "faulty"),
            .error(code: "PluginCrashed", message: "m", domain: "calc"),
        ]
        for outcome in outcomes { tally.count(outcome) }
        let counts = tally.snapshot
        #expect(counts == OutcomeCounts(succeeded: 2, failed: 6, cancelled: 1, crashed: 1, timedOut: 2))
        #expect(counts.processed == 9)
        #expect(counts.summary == "processed 9, succeeded 2, failed 6 (crashed 1, timed out 2), cancelled 1")
    }

    @Test func tallyCountsFromManyThreads() async {
        let tally = OutcomeTally()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<4 {
                group.addTask {
                    for _ in 0..<10_000 { tally.count(index % 2 == 0 ? .success() : hostError("PluginCrashed")) }
                }
            }
        }
        #expect(tally.snapshot == OutcomeCounts(succeeded: 20_000, failed: 20_000, crashed: 20_000))
    }

    @Test func textSummaryLine() {
        let counts = OutcomeCounts(succeeded: 9, failed: 2, cancelled: 1, crashed: 1, timedOut: 0)
        #expect(LogFormat.text.summaryLine(counts, final: true)
            == "xcallback: processed 12, succeeded 9, failed 2 (crashed 1, timed out 0), cancelled 1\n")
    }

    @Test(arguments: [true, false])
    func jsonSummaryLine(final: Bool) throws {
        let counts = OutcomeCounts(succeeded: 9, failed: 2, cancelled: 1, crashed: 1, timedOut: 0)
        let line = LogFormat.json.summaryLine(counts, final: final)
        #expect(line.hasSuffix("}\n"))
        #expect(line.filter { $0 == "\n" }.count == 1)
        let object = try jsonObject(line)
        #expect(object["level"] as? String == "notice")
        #expect(object["label"] as? String == "xcallback")
        #expect(object["message"] as? String == counts.summary)
        let summary = try #require(object["summary"] as? [String: Any])
        #expect(summary["processed"] as? Int == 12)
        #expect(summary["succeeded"] as? Int == 9)
        #expect(summary["failed"] as? Int == 2)
        #expect(summary["crashed"] as? Int == 1)
        #expect(summary["timedOut"] as? Int == 0)
        #expect(summary["cancelled"] as? Int == 1)
        #expect(summary["final"] as? Bool == final)
    }

    @Test func timestampsAreRFC3339UTCWithMilliseconds() {
        #expect(UTCTimestamp.format(seconds: 0, milliseconds: 5) == "1970-01-01T00:00:00.005Z")
        #expect(UTCTimestamp.format(seconds: 1_700_000_000, milliseconds: 123) == "2023-11-14T22:13:20.123Z")
        let now = UTCTimestamp.now()
        #expect(now.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil, "\(now)")
    }

    @Test func jsonLogHandlerWritesOneObjectPerLine() throws {
        let captured = try CapturedConsole()
        var handler = JSONLogHandler(label: "xcallback", console: captured.console, metadataProvider: nil)
        handler.logLevel = .warning
        handler[metadataKey: "plugin"] = "calc"
        let logger = Logger(label: "xcallback") { _ in handler }
        logger.info("not at this level")
        logger.warning("a \"quoted\"\nmessage", metadata: [
            "count": "\(3)", "nested": ["list": ["a", "b"], "text": "x"], "plugin": "override",
        ])
        let output = captured.take()
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines.last == "", "one line and its newline: \(output)")
        let object = try jsonObject(String(lines[0]))
        #expect(Set(object.keys) == ["time", "level", "label", "message", "metadata", "source"])
        #expect(object["level"] as? String == "warning")
        #expect(object["label"] as? String == "xcallback")
        #expect(object["message"] as? String == "a \"quoted\"\nmessage")
        #expect(object["source"] as? String == "XCallbackHostTests")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["plugin"] as? String == "override")
        #expect(metadata["count"] as? String == "3")
        let nested = try #require(metadata["nested"] as? [String: Any])
        #expect(nested["list"] as? [String] == ["a", "b"])
        #expect(nested["text"] as? String == "x")
    }

    @Test func textFormatIsSwiftLogsStreamFormat() throws {
        let captured = try CapturedConsole()
        let handler = LogFormat.text.handler(label: "xcallback", level: .notice, console: captured.console)
        let logger = Logger(label: "xcallback") { _ in handler }
        logger.info("dropped")
        logger.error("broken plug-in")
        let output = captured.take()
        #expect(output.hasSuffix(" error xcallback: [XCallbackHostTests] broken plug-in\n"), "\(output)")
        #expect(!output.contains("dropped"))
    }

    @Test func consoleErasesTheStatusLineBeforeOtherLines() throws {
        let captured = try CapturedConsole()
        let console = captured.console
        console.clearStatus()
        console.write("plain\n")
        #expect(captured.take() == "plain\n", "nothing to erase: nothing written for it")
        console.showStatus("10 done")
        console.showStatus("20 done")
        console.write("a log line\n")
        console.write("another\n")
        console.showStatus("30 done")
        console.clearStatus()
        console.clearStatus()
        #expect(captured.take() == "\r\u{1B}[K10 done\r\u{1B}[K20 done\r\u{1B}[Ka log line\nanother\n\r\u{1B}[K30 done\r\u{1B}[K")
    }

    @Test func progressLineText() {
        #expect(ProgressReporter.line(done: 41200, percentRead: 42, rate: 20511.4, errors: 3)
            == "xcallback: 41200 done, 42% read, 20511/s, 3 errors")
        #expect(ProgressReporter.line(done: 1, percentRead: nil, rate: 0.6, errors: 1)
            == "xcallback: 1 done, 1/s, 1 error")
    }

    @Test func progressIsWantedOnlyForAFileWithATerminal() throws {
        let directory = try TemporaryDirectory()
        let file = open(try directory.write("input.txt", "x\n"), O_RDONLY)
        defer { close(file) }
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        // A pipe is not a terminal, and a pipe is not a file.
        #expect(!ProgressReporter.isWanted(input: file, diagnostics: ends[1]))
        #expect(!ProgressReporter.isWanted(input: ends[0], diagnostics: ends[1]))
    }

    @Test(.scaledTimeLimit(minutes: 1))
    func progressReporterDrawsThenErasesOnStop() throws {
        let captured = try CapturedConsole()
        let directory = try TemporaryDirectory()
        let file = open(try directory.write("input.txt", String(repeating: "x", count: 100)), O_RDONLY)
        defer { close(file) }
        _ = lseek(file, 50, SEEK_SET)
        let reporter = ProgressReporter(console: captured.console, input: file, interval: .milliseconds(10)) {
            OutcomeCounts(succeeded: 7, failed: 2)
        }
        reporter.start()
        // Bounded: a line appears within a few intervals.
        var output = ""
        let deadline = Date(timeIntervalSinceNow: 10)
        while !output.contains("done"), Date() < deadline {
            _ = captured.waitForData(milliseconds: 1000)
            output += captured.take()
        }
        reporter.stop()
        output += captured.take()
        #expect(output.contains("\r\u{1B}[Kxcallback: 9 done, 50% read, "), "\(output)")
        #expect(output.contains(", 2 errors"), "\(output)")
        #expect(output.hasSuffix("\r\u{1B}[K"), "erased on stop: \(output)")
        // Stopped: nothing more is drawn over the next few intervals.
        #expect(!captured.waitForData(milliseconds: 50))
    }
}
