import Foundation
import Testing

/// A record is always one line (docs/usage.md, "Output"): whatever a request
/// decodes to, every byte that could end or forge a line is encoded again
/// before it is written. Before, `x-success=app://ok%0Aerror?…` decoded to
/// a callback with a line feed, and `url` output printed a forged second
/// record.
@Suite("A record is one line", .ownThreads)
struct RecordLineTests {
    static let add = "calc://x-callback-url/add?"

    @Test("a callback that decodes to a line feed cannot forge a second record", arguments: ["url", "jsonl"])
    func forgedRecord(format: String) throws {
        let fixture = try HostFixture(["Calculator"])
        let lines = [
            Self.add + "lhs=1&rhs=2&x-success=app://ok%0Aerror?errorCode=Forged",
            Self.add + "lhs=1&rhs=x&x-error=app://bad%0D%0Aerror?errorCode=Forged%0A",
            "calc://x-callback-url/divide?lhs=1&rhs=0&x-error=app://e%1B%5B2J%7F#frag%0A",
        ]
        let result = try fixture.run(["-k", "--output", format], lines: lines)
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(result.lines.count == 3, "records: \(result.lines)")
        #expect(!result.stdout.contains("\r") && !result.stdout.contains("\u{1B}") && !result.stdout.contains("\u{7F}"))
        if format == "url" {
            #expect(result.lines.first == "app://ok%0Aerror?errorCode=Forged&result=3")
            #expect(result.lines.allSatisfy { !$0.hasPrefix("error?errorCode=Forged") })
        } else {
            let records = try result.records()
            #expect(records.first?.callback == "app://ok%0Aerror?errorCode=Forged&result=3")
        }
    }

    /// Hostile pieces for callback URLs and values: escapes of every kind of
    /// line break and control, raw CR and tab, separators.
    static let pieces = ["%0A", "%0D", "%0D%0A", "%1B", "%7F", "%09", "%E2%80%A8", "%C2%85", "\r", "\t", "%25", "&", "=",
                         "#", "?", "app://ok", "error?errorCode=Forged", "x", "%20", "+", ";", "%2F", "\u{7F}"]

    @Test("property: over 5,000 generated hostile requests, exactly one record line per request, in both formats",
          arguments: ["url", "jsonl"])
    func oneRecordPerRequest(format: String) throws {
        var generator = SplitMix64(seed: 0x11E5_EC0D)
        var lines: [String] = []
        for index in 0..<5_000 {
            func hostile() -> String {
                (0..<Int.random(in: 1...6, using: &generator)).map { _ in Self.pieces.randomElement(using: &generator)! }.joined()
            }
            let callback = ["x-success", "x-error", "x-cancel"].randomElement(using: &generator)!
            let rhs = Bool.random(using: &generator) ? "\(index)" : hostile()
            lines.append("\(Self.add)lhs=1&rhs=\(rhs)&text=\(hostile())&\(callback)=app://\(hostile())")
        }
        let fixture = try HostFixture(["Calculator"])
        let result = try fixture.run(["-k", "--output", format], lines: lines, timeout: TestTiming.scaled(60))
        #expect(result.status == .exited(0), "stderr: \(result.stderr.suffix(1000))")
        #expect(result.lines.count == lines.count, "\(result.lines.count) record lines for \(lines.count) requests")
        #expect(!result.stdout.contains("\r"), "a raw CR in the records")
        if format == "jsonl" {
            let inputs = try result.records().map { $0.input ?? "" }
            // Lines are trimmed of ASCII white space at both ends as they are read.
            let trimmed = lines.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " \t\r")) }
            #expect(inputs == trimmed, "the records' inputs are not the requests")
        }
    }
}

/// An await cannot hold `run` for a day (docs/desktop.md, "call --via-open"): its
/// timeout is at most an hour.
@Suite("Await limits", .ownThreads)
struct AwaitLimitTests {
    @Test("await?timeout past 3600 is a ParameterError at once")
    func awaitTimeoutIsCapped() throws {
        let fixture = try HostFixture([])
        let result = try fixture.run(["--output", "jsonl"], lines: [
            "xcallback://x-callback-url/await?requestID=request-0001&timeout=86400",
        ], timeout: TestTiming.scaled(20))
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let records = try result.records()
        #expect(records.first?.errorCode == "ParameterError", "\(records)")
        #expect(records.first?.params["errorMessage"]?.contains("at most 3600") == true, "\(records)")
    }
}
