import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A worker is hostile, and so is everything it writes (issue 27): it holds
/// no descriptor of the host's, so nothing it does to its stdout or stderr
/// reaches the host's records, log or terminal; and nothing it writes in the
/// page it shares with the host can make the host trap or believe more than
/// its own records allow. Each attack was reproduced against the release
/// build before: records lost or forged, a stopped or dead host.
@Suite("Hostile workers", .ownThreads, .serialized)
struct HostileWorkerTests {
    static let calculation = "calc://x-callback-url/add?lhs=1&rhs=2"

    /// A plug-in folder with the calculator, the faulty plug-in and the
    /// hostile one; readable by `nobody` when `forOtherUser`.
    static func fixture(forOtherUser: Bool = false) throws -> HostFixture {
        let fixture = try HostFixture(["Calculator", "Faulty"], isolation: "process")
        try TestPlugin.build(HostilePlugin.name, source: HostilePlugin.source, into: fixture.plugins)
        if forOtherUser { #expect(chmod(fixture.scratch.path, 0o755) == 0) }
        return fixture
    }

    /// `xcallback ARGUMENTS` through `sh -c`, with `redirection` after it
    /// (`2>&1`, `> FILE 2>&1`), as `user` when `asOtherUser`.
    static func runRedirected(_ arguments: [String], _ redirection: String, lines: [String], asOtherUser: Bool = false,
                              timeout: Double = 120) throws -> RunResult {
        let shell = ["/bin/sh", "-c", "exec \"$0\" \"$@\" \(redirection)", Products.xcallback] + arguments
        let command = asOtherUser ? PeerTrustTests.asOther(shell) : shell
        return try xcallback(command, input: Array(lines.map { $0 + "\n" }.joined().utf8),
                             timeout: TestTiming.scaled(timeout), executable: "/usr/bin/env")
    }

    /// 20,000 lines, the attack in the middle.
    static func flood(around attack: String) -> [String] {
        (0..<20_000).map { $0 == 10_000 ? attack : "calc://x-callback-url/add?lhs=\($0)&rhs=1" }
    }

    /// Every calculation of `flood` answered exactly once in `output`.
    static func expectEveryInnocentRecord(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var seen = [Int](repeating: 0, count: 20_000)
        for line in ChildProcess.lines(output) where line.hasPrefix("success?result=") {
            if let value = Int(line.dropFirst("success?result=".count)), value >= 1, value <= 20_000 {
                seen[value - 1] += 1
            }
        }
        let innocent = (0..<20_000).filter { $0 != 10_000 }
        let missing = innocent.filter { seen[$0] == 0 }
        let doubled = innocent.filter { seen[$0] > 1 }
        // A record that is there but mangled (split, or run into a log line) shows here.
        let mangled = ChildProcess.lines(output).filter { $0.contains("result=") && !$0.hasPrefix("success?result=") }
        #expect(missing.isEmpty && doubled.isEmpty,
                "\(missing.count) innocent records missing (\(missing.prefix(5).map { $0 + 1 })), \(doubled.count) doubled; mangled lines: \(mangled.prefix(5))",
                sourceLocation: sourceLocation)
    }

    @Test("O_NONBLOCK on its stdout and stderr, kept full: 19,999 innocent records of 20,000, under 2>&1",
          .scaledTimeLimit(minutes: 4), arguments: [false, true])
    func nonBlockingOutput(asOtherUser: Bool) throws {
        if asOtherUser { try Requirement.otherUser.cancelIfUnmet() }
        let fixture = try Self.fixture(forOtherUser: asOtherUser)
        let shell = ["/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", Products.xcallback] + fixture.runPrefix
        let host = try ChildProcess(asOtherUser ? PeerTrustTests.asOther(shell) : shell, executable: "/usr/bin/env", stdin: .pipe)
        // Fed in slices, so the host writes records all the while the
        // attacker keeps the pipe non-blocking and full (3 s).
        let lines = Self.flood(around: "hostile://x-callback-url/nonblock")
        for start in stride(from: 0, to: lines.count, by: 500) {
            #expect(host.write(lines[start..<min(start + 500, lines.count)].map { $0 + "\n" }.joined()))
            if start >= 10_000 { usleep(100_000) }
        }
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(120)) == .exited(0), "\(host.stdout.suffix(2000))")
        Self.expectEveryInnocentRecord(host.stdout)
        let attack = host.stdoutLines.filter { $0.contains("keeping") }
        #expect(attack.count == 1, "the attacker's own record: \(attack)")
        #expect(host.stdout.contains("processed 20000, succeeded 20000"), "\(host.stdout.suffix(500))")
    }

    @Test("a worker has no terminal: it cannot open /dev/tty, take the foreground or stop the output",
          .scaledTimeLimit(minutes: 1), arguments: [[], ["--sandbox", "off"]])
    func noTerminal(sandbox: [String]) throws {
        let fixture = try Self.fixture()
        let input = fixture.scratch.file("input.txt")
        try Data("hostile://x-callback-url/terminal\n\(Self.calculation)\n".utf8).write(to: URL(fileURLWithPath: input))
        // script(1) runs the host on a pseudo-terminal that is its
        // controlling terminal, as an operator's shell would.
        let command = ([Products.xcallback] + fixture.runPrefix + sandbox).joined(separator: " ") + " < \(input)"
        let result = try xcallback(["script", "-qec", command, "/dev/null"], timeout: TestTiming.scaled(30),
                                   executable: "/usr/bin/env")
        #expect(result.status == .exited(0), "\(result.stdout)")
        // A session of its own has no controlling terminal (ENXIO); in the
        // sandbox's file view there is no /dev/tty at all (ENOENT).
        let refusal = sandbox.isEmpty ? "No%20such%20file%20or%20directory" : "No%20such%20device%20or%20address"
        #expect(result.stdout.contains("result=tty%20\(refusal)%2C%20ttys%200%2C%20foreground%200%2C%20stopped%200"),
                "\(result.stdout)")
        #expect(result.stdout.contains("success?result=3"), "\(result.stdout)")
    }

    @Test("reopening its stderr read-only takes nothing another plug-in wrote", .scaledTimeLimit(minutes: 1))
    func reopenedStderr() throws {
        let fixture = try Self.fixture()
        let host = try ChildProcess(fixture.runPrefix + ["--output", "jsonl"], stdin: .pipe)
        #expect(host.write("hostile://x-callback-url/steal?ms=1500\n"))
        for _ in 0..<20 { #expect(host.write("faulty://x-callback-url/noise\n")) }
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(30)) == .exited(0), "\(host.stderr)")
        let records = try host.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.count == 21)
        // A root host's worker runs as nobody: the pipe is root's, and it
        // cannot even reopen it. Anyone else's takes nothing from it.
        let stolen = records.first { $0.input?.hasPrefix("hostile://") == true }
        let expected = geteuid() == 0 ? "open: Permission denied" : "took 0, foreign 0"
        #expect(stolen?.params["result"] == expected, "\(records)")
        let noise = host.stderr.components(separatedBy: "faulty: noise on stderr").count - 1
        #expect(noise == 20, "the operator's log has \(noise) of 20 lines: \(host.stderr.suffix(2000))")
    }

    @Test("ftruncate and pwrite on its stdout and stderr leave the host's output file whole",
          .scaledTimeLimit(minutes: 1))
    func outputFileStaysWhole() throws {
        let fixture = try Self.fixture()
        let file = fixture.scratch.file("all.txt")
        let lines = (0..<30).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1" } + ["hostile://x-callback-url/truncate"]
            + (30..<60).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1" }
        let result = try Self.runRedirected(fixture.runPrefix + ["--keep-order"], "> \(file) 2>&1", lines: lines)
        #expect(result.status == .exited(0))
        let written = try String(contentsOfFile: file, encoding: .utf8)
        let records = ChildProcess.lines(written).filter { $0.hasPrefix("success?result=") && !$0.contains("truncated") }
        #expect(records == (1...60).map { "success?result=\($0)" }, "\(written)")
        #expect(!written.contains("forged"))
        #expect(written.contains("truncated%200%2C%20overwritten%200"), "\(written)")
    }

    @Test("a page whose pending-bytes word is past Int.max, then a crash: 19,999 innocent records of 20,000",
          .scaledTimeLimit(minutes: 4), arguments: [false, true])
    func pendingWordPastIntMax(asOtherUser: Bool) throws {
        if asOtherUser { try Requirement.otherUser.cancelIfUnmet() }
        let fixture = try Self.fixture(forOtherUser: asOtherUser)
        let attack = "hostile://x-callback-url/page?pending=0xFFFFFFFFFFFFFFF0"
        let result = try Self.runRedirected(fixture.runPrefix, "", lines: Self.flood(around: attack), asOtherUser: asOtherUser)
        #expect(result.status == .exited(0), "\(result.stderr.suffix(2000))")
        Self.expectEveryInnocentRecord(result.stdout)
        #expect(result.lines.count == 20_000)
        #expect(result.lines.filter { $0.contains("PluginCrashed") }.count == 1)
    }

    @Test("a page of pseudo-random bytes, then a crash: one record, and the host goes on", .scaledTimeLimit(minutes: 2))
    func randomPages() throws {
        let fixture = try Self.fixture()
        let host = try ChildProcess(fixture.runPrefix + ["--output", "jsonl", "--restart-limit", "1000"], stdin: .pipe)
        var answered = 0
        for seed in 1...5 {
            for line in ["hostile://x-callback-url/page?seed=\(seed)", Self.calculation] {
                #expect(host.write(line + "\n"))
                answered += 1
                try #require(host.waitForStdoutLines(answered, timeout: TestTiming.scaled(20)), "no record for \(line): \(host.stderr)")
            }
            let records = try host.stdoutLines.suffix(2).map { try Record(jsonLine: $0) }
            #expect(records.first?.errorCode == "PluginCrashed", "\(records)")
            #expect(records.last?.params["result"] == "3", "\(records)")
        }
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(20)) == .exited(0), "\(host.stderr)")
    }

    @Test("a page that says 'began nothing' and 'died at the memory ceiling' is not believed",
          .scaledTimeLimit(minutes: 1))
    func lyingPage() throws {
        let fixture = try Self.fixture()
        let result = try fixture.run(["--output", "jsonl"], lines: ["hostile://x-callback-url/page?begun=0&memory=1", Self.calculation])
        #expect(result.status == .exited(0))
        let records = try result.records()
        #expect(records.count == 2)
        let attack = records.first { $0.input?.hasPrefix("hostile") == true }
        // Not MemoryLimit: the kernel's count of its memory says otherwise.
        #expect(attack?.errorCode == "PluginCrashed", "\(records)")
        // Its word that it had not begun sends it to one more worker at
        // most: before, it ran six times and then the plug-in was disabled.
        let runs = result.stderr.components(separatedBy: "hostile: page attack runs").count - 1
        #expect(runs >= 1 && runs <= 2, "ran \(runs) times: \(result.stderr)")
        #expect(!result.stderr.contains("disabled"), "\(result.stderr)")
    }

    @Test("a worker that forges its ready frame is refused, and its name forges no log line",
          .scaledTimeLimit(minutes: 1))
    func forgedReadyFrame() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        try TestPlugin.build(HostilePlugin.liarName, source: HostilePlugin.liarSource, into: fixture.plugins)
        let result = try fixture.run(["--output", "jsonl"], lines: ["liar://x-callback-url/echo", Self.calculation])
        #expect(result.status == .exited(0), "\(result.stderr)")
        let records = try result.records()
        #expect(records.count == 2)
        #expect(records.first { $0.input == Self.calculation }?.params["result"] == "3", "\(records)")
        #expect(records.first { $0.input?.hasPrefix("liar") == true }?.outcome == "error", "\(records)")
        #expect(result.stderr.contains("which is not a plug-in name"), "\(result.stderr)")
        for line in result.stderr.split(separator: "\n") where line.contains("FORGED HOST LINE") {
            #expect(line.contains("which is not a plug-in name"), "a forged line: \(line)")
        }
    }

    /// `check` learns a plug-in from its worker's handshake: a report
    /// written on a pipe is output, logged as such, and a flood of it
    /// holds only the worker, until the time limit.
    @Test("a plug-in that writes the old probe's report itself: check names no forged identity, and a flood is cut off",
          .scaledTimeLimit(minutes: 1), arguments: [false, true])
    func forgedProbeReport(flood: Bool) throws {
        let fixture = try HostFixture([], isolation: "process")
        let library = try TestPlugin.build("probeliar", source: HostilePlugin.probeLiarSource(flood: flood), into: fixture.plugins)
        let result = try xcallback(["check", library], timeout: TestTiming.scaled(30))
        #expect(result.status != .exited(0), "\(result.stdout)")
        #expect(!result.stdout.contains("9.9.9") && !result.stdout.contains("bank://"), "\(result.stdout)")
        let reason = flood ? "did not finish loading within 10 s" : "the worker exited with status 0 before it was ready"
        #expect(result.stderr.contains(reason), "\(result.stderr)")
    }

    @Test("F_SETOWN to the host is refused, and the host does not die of SIGIO", .scaledTimeLimit(minutes: 1))
    func ownerSignal() throws {
        let fixture = try Self.fixture()
        let host = try ChildProcess(fixture.runPrefix + ["--output", "jsonl"], stdin: .pipe)
        #expect(host.write("hostile://x-callback-url/setown?host=\(host.pid)\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(10)), "\(host.stderr)")
        let record = try Record(jsonLine: host.stdoutLines[0])
        #expect(record.params["result"] == "F_SETOWN: Operation not permitted; high bits: Operation not permitted", "\(record)")
        // Whoever sends it, SIGIO does not end the host.
        host.send(signal: SIGIO)
        #expect(host.write(Self.calculation + "\n"))
        try #require(host.waitForStdoutLines(2, timeout: TestTiming.scaled(10)), "\(host.stderr)")
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(20)) == .exited(0), "\(host.stderr)")
    }

    @Test("a line of 4,096 control bytes is logged escaped and cut to 4,096 characters", .scaledTimeLimit(minutes: 1))
    func controlBytesAreCutAfterEscaping() throws {
        let fixture = try Self.fixture()
        let result = try fixture.run([], lines: ["hostile://x-callback-url/controls"])
        #expect(result.status == .exited(0))
        let logged = result.stderr.split(separator: "\n").filter { $0.contains("\\x01") }
        #expect(logged.count == 1, "\(result.stderr.prefix(500))")
        #expect((logged.first?.utf8.count ?? 0) < 4096 + 200, "a line of \(logged.first?.utf8.count ?? 0) bytes")
        #expect(logged.first?.contains("more cut]") == true)
    }

    @Test("a worker that stops reading its requests holds up no other plug-in's", .scaledTimeLimit(minutes: 2))
    func stalledWorkerBlocksNobody() throws {
        let fixture = try HostFixture(["Faulty", "Calculator"], isolation: "process")
        let padding = String(repeating: "a", count: 150)
        // 4,000 requests the worker never reads (its handler hangs on the
        // first), more than its socket holds, then a calculation.
        let lines = (0..<4_000).map { _ in "faulty://x-callback-url/hang?x=\(padding)" } + [Self.calculation]
        let host = try ChildProcess(fixture.runPrefix + ["--output", "jsonl", "--timeout", "20"], stdin: .pipe)
        #expect(host.write(lines.map { $0 + "\n" }.joined()))
        // Before, the calculation waited for every hung request's deadline,
        // or for ever: the threads the input was handed to each queued
        // behind the stuck write.
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(60)), "\(host.stderr.suffix(1000))")
        let first = try Record(jsonLine: host.stdoutLines[0])
        #expect(first.params["result"] == "3", "the first record: \(first)")
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(90)) == .exited(0), "\(host.stderr.suffix(1000))")
        #expect(host.stdoutLines.count == lines.count, "every request keeps its record")
    }

    @Test("a worker's own loadFailed message is logged on one line, escaped", .scaledTimeLimit(minutes: 1))
    func forgedLoadFailure() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        try TestPlugin.build("failliar", source: HostilePlugin.failLiarSource, into: fixture.plugins)
        let result = try fixture.run([], lines: [Self.calculation])
        #expect(result.status == .exited(0), "\(result.stderr)")
        #expect(result.stdout.contains("success?result=3"))
        #expect(!result.stderr.contains("\u{1B}"), "a terminal sequence reached the log: \(result.stderr)")
        let forged = result.stderr.split(separator: "\n").filter { $0.contains("FORGED LOAD LINE") }
        #expect(forged.allSatisfy { $0.contains("libfailliar.so: nothing\\") }, "a forged line: \(forged)")
        #expect(!forged.isEmpty, "\(result.stderr)")
    }
}
