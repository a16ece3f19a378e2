import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The fast lanes' reply slots (`SynchronousSlot`) driven by a C plug-in
/// that completes its calls from other threads: late, twice, declining,
/// right as its handler returns, past a short Timeout, and while a metrics
/// scrape reads the slot. Every line ends in exactly one record, in both
/// isolation modes.
@Suite("Lane reply slots under a racing plug-in", .ownThreads)
struct LaneRaceTests {
    static func fixture(isolation: String) throws -> HostFixture {
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build(LaneRacePlugin.name, source: LaneRacePlugin.source, into: fixture.plugins)
        return fixture
    }

    /// Line `index`'s request: its callbacks name it, so its record does.
    static func line(_ index: Int, _ action: String) -> String {
        "racer://x-callback-url/\(action)&x-success=ok%3A%2F%2Fr%3Fi%3D\(index)"
            + "&x-error=bad%3A%2F%2Fr%3Fi%3D\(index)&x-cancel=gone%3A%2F%2Fr%3Fi%3D\(index)"
    }

    /// The records by line index: each line's records, with its callback's
    /// `?i=N` taken off.
    static func recordsByLine(_ output: String) -> [Int: [String]] {
        var records: [Int: [String]] = [:]
        for record in ChildProcess.lines(output) {
            guard let marker = record.range(of: "?i=") else { continue }
            let rest = record[marker.upperBound...]
            let digits = rest.prefix { $0.isNumber }
            guard let index = Int(digits) else { continue }
            records[index, default: []].append(String(record[..<marker.lowerBound]) + String(rest.dropFirst(digits.count)))
        }
        return records
    }

    @Test("a second completion after the handler returned is refused and named",
          arguments: ["none", "process"])
    func secondCompletionAfterReturn(isolation: String) throws {
        let host = try Self.fixture(isolation: isolation)
        let result = try host.run(["--log-format", "json"],
                                  // The last line keeps the host (and a worker) up
                                  // while the second completions come.
                                  lines: (0..<3).map { Self.line($0, "twice?us=20000") }
                                      + [Self.line(3, "other?how=s&us=300000")],
                                  timeout: TestTiming.scaled(30))
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let records = Self.recordsByLine(result.stdout)
        #expect((0..<3).allSatisfy { records[$0] == ["ok://r&by=handler"] }, "\(result.stdout)")
        #expect(records[3] == ["ok://r&by=thread"], "\(result.stdout)")
        let refusals = ChildProcess.lines(result.stderr).filter { $0.contains("already completed") }
        #expect(refusals.count == 3, "stderr: \(result.stderr)")
        // The log names the plug-in, the request and its route (the SPEC's
        // "when known": the host completed that request moments before).
        #expect(refusals.allSatisfy {
            $0.contains("plug-in 'racer' completed request ") && $0.contains("(route racer://x-callback-url/twice)")
        }, "stderr: \(result.stderr)")
    }

    /// Lines whose thread completes (success, cancel, error or decline)
    /// before, as or after the handler returns.
    static func mixed(count: Int, maxDelay: Int) -> [(line: String, expected: String)] {
        let hows: [(String, String)] = [("s", "ok://r&by=thread"), ("c", "gone://r"),
                                         ("e", "bad://r&errorCode=Late&errorMessage=from%20a%20thread&errorDomain=racer"),
                                         ("d", "ok://r&by=fallback")]
        var generator = SplitMix64(seed: 0x5107)
        return (0..<count).map { index in
            let (how, expected) = hows[index % hows.count]
            let us = Int(generator.next() % UInt64(maxDelay + 1))
            let hold = Int(generator.next() % UInt64(maxDelay + 1))
            return (line(index, "other?how=\(how)&us=\(us)&hold=\(hold)"), expected)
        }
    }

    /// Runs `lines` through `host`: each gets exactly its expected record,
    /// and no completion is refused as a second one.
    private static func expectOneRecordEach(_ lines: [(line: String, expected: String)], from host: HostFixture) throws {
        let result = try host.run([], lines: lines.map(\.line), timeout: TestTiming.scaled(120))
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(!looksLikeACrash(result.stderr), "stderr: \(result.stderr)")
        let records = recordsByLine(result.stdout)
        let wrong = lines.indices.filter { records[$0] != [lines[$0].expected] }
        #expect(wrong.isEmpty, "\(wrong.count) lines: \(wrong.prefix(5).map { (lines[$0].line, records[$0] ?? []) })")
        #expect(result.lines.count == lines.count)
        #expect(!result.stderr.contains("already completed"), "stderr: \(result.stderr)")
    }

    @Test("completions from other threads, racing the handler's return: one record each",
          .scaledTimeLimit(minutes: 3), arguments: ["none", "process"])
    func completionsFromOtherThreads(isolation: String) throws {
        let host = try Self.fixture(isolation: isolation)
        let lines = Self.mixed(count: 400, maxDelay: 300)
        try Self.expectOneRecordEach(lines, from: host)
    }

    @Test("completions racing a short Timeout: one record each, late ones refused",
          .scaledTimeLimit(minutes: 3), arguments: ["none", "process"])
    func completionsRacingTimeout(isolation: String) throws {
        let host = try Self.fixture(isolation: isolation)
        // Up to 0.4 s against a 0.2 s Timeout: some in time, some after.
        let lines = Self.mixed(count: 120, maxDelay: 400_000)
        let result = try host.run(["--timeout", "0.2"], lines: lines.map(\.line), timeout: TestTiming.scaled(120))
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(!looksLikeACrash(result.stderr), "stderr: \(result.stderr)")
        let records = Self.recordsByLine(result.stdout)
        let wrong = lines.indices.filter { index in
            guard let got = records[index], got.count == 1 else { return true }
            return got[0] != lines[index].expected && !got[0].hasPrefix("bad://r&errorCode=Timeout&")
        }
        #expect(wrong.isEmpty, "\(wrong.count) lines: \(wrong.prefix(5).map { (lines[$0].line, records[$0] ?? []) })")
        #expect(result.lines.count == lines.count)
    }

    @Test("handlers that stall past the hand-off, answered before, during or after it: one record each",
          .scaledTimeLimit(minutes: 3), arguments: ["none", "process"])
    func stalledHandlers(isolation: String) throws {
        let host = try Self.fixture(isolation: isolation)
        // A hand-off comes 50 ms into a stall: a thread answers before it,
        // around it, or after the handler returns; some handlers answer
        // in place themselves once they are over the stall; quick lines
        // run in between, on whichever thread reads.
        var lines: [(line: String, expected: String)] = []
        let holds = [0, 60_000, 150_000]
        let delays = [0, 30_000, 100_000, 200_000]
        for hold in holds {
            for us in delays {
                let index = lines.count
                lines.append((Self.line(index, "other?how=s&us=\(us)&hold=\(hold)"), "ok://r&by=thread"))
                lines.append((Self.line(index + 1, "slow?hold=\(hold)&v=x"),
                              "ok://r&v=x&odd%20name%2F%C3%A9=a%20b%26c%3Dd%2Be%23f%3F%25&empty="))
                lines.append((Self.line(index + 2, "other?how=c&us=\(us)&hold=\(hold)"), "gone://r"))
                lines.append((Self.line(index + 3, "other?how=d&us=\(us)&hold=\(hold)"), "ok://r&by=fallback"))
            }
        }
        try Self.expectOneRecordEach(lines, from: host)
    }

    @Test("a metrics scrape reading the slots leaves the records byte for byte as they were",
          .scaledTimeLimit(minutes: 3), arguments: ["none", "process"])
    func scrapesDoNotChangeRecords(isolation: String) throws {
        let host = try Self.fixture(isolation: isolation)
        let metrics = host.scratch.file("metrics.sock")
        let count = 3_000
        let values = ["plain", "a%20b%26c%3Dd", "%C3%A9t%C3%A9", "x%2By%23z"]
        let lines = (0..<count).map { Self.line($0, "slow?hold=\($0 % 5 == 0 ? 200 : 0)&v=\(values[$0 % values.count])") }
        let child = try host.start(["--metrics", metrics], stdin: .pipe)
        try #require(waitForSocketListener(metrics, host: child), "stderr: \(child.stderr)")
        let done = SharedValue(false)
        let scrapes = SharedValue(0)
        let scraper = Thread {
            while !done.value {
                if Scrape.body(unix: metrics) != nil { scrapes.add(1) }
            }
        }
        scraper.start()
        #expect(child.write(lines.map { $0 + "\n" }.joined()))
        child.closeInput()
        #expect(child.waitForExit(timeout: TestTiming.scaled(120)) == .exited(0), "stderr: \(child.stderr)")
        done.set(true)
        let records = Self.recordsByLine(child.stdout)
        let decoded = ["plain", "a%20b%26c%3Dd", "%C3%A9t%C3%A9", "x%2By%23z"]
        let wrong = (0..<count).filter { index in
            records[index] != ["ok://r&v=\(decoded[index % decoded.count])&odd%20name%2F%C3%A9=a%20b%26c%3Dd%2Be%23f%3F%25&empty="]
        }
        #expect(wrong.isEmpty, "\(wrong.count) lines: \(wrong.prefix(3).map { records[$0] ?? [] })")
        #expect(scrapes.value > 0)
    }
}

/// A value shared with a thread, under a lock.
private final class SharedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
    func set(_ value: Value) { lock.lock(); stored = value; lock.unlock() }
}

private extension SharedValue where Value == Int {
    func add(_ delta: Int) { lock.lock(); stored += delta; lock.unlock() }
}
