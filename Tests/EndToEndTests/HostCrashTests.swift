import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A host that crashes (an in-process plug-in's fault, a trap in the host)
/// dies at once, by the signal, saying why in one line and nothing else of
/// its own: no summary, which a crashed host cannot vouch for. It used to
/// linger about 38 s in the Swift runtime's backtracer and print its summary
/// 16 times: the backtracer's thread-stopping SIGUSR1 reached the signal
/// thread's sigwait as a request for a summary, 2 s apart.
@Suite("A host that crashes", .ownThreads)
struct HostCrashTests {
    static let crashLine = "xcallback: the host crashed (SIGSEGV) while in-process plug-in 'faulty' handled a request; "
        + "run it with --isolation process to contain it"

    /// The runner's environment without SWIFT_BACKTRACE (the user's
    /// setting, which the host honours), plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = nil
        environment["XCALLBACK_PLUGIN_PATH"] = nil
        environment.merge(extra) { $1 }
        return environment
    }

    /// A host in process on a pipe, answering in jsonl.
    static func start(_ fixture: HostFixture, _ arguments: [String] = [], executable: String = Products.xcallback,
                      environment: [String: String] = environment()) throws -> ChildProcess {
        try ChildProcess(fixture.runPrefix + ["--output", "jsonl"] + arguments, executable: executable, stdin: .pipe,
                         environment: environment)
    }

    /// The stderr lines of the host's own, the plug-in's log lines left out.
    static func hostLines(_ stderr: String) -> [String] {
        ChildProcess.lines(stderr).filter { !$0.contains("on purpose") }
    }

    /// Sends one line that gets a record, waits for the record, then the
    /// crash; returns the host's status and how long it took to die.
    static func answerThenCrash(_ host: ChildProcess, crash: String = "faulty://x-callback-url/crash")
        throws -> (status: ExitStatus, seconds: Double) {
        #expect(host.write("calc://x-callback-url/add?lhs=2&rhs=3\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(10)), "no record; stderr: \(host.stderr)")
        let start = Date()
        #expect(host.write(crash + "\n"))
        let status = host.waitForExit(timeout: TestTiming.scaled(20))
        return (status, Date().timeIntervalSince(start))
    }

    @Test("an in-process plug-in's SIGSEGV: the host dies by it within seconds, with one line naming the plug-in",
          .scaledTimeLimit(minutes: 1))
    func inProcessSegfault() throws {
        let fixture = try HostFixture(["Calculator", "Faulty"])
        let host = try Self.start(fixture)
        let (status, seconds) = try Self.answerThenCrash(host)
        #expect(status == .signaled(SIGSEGV), "stderr: \(host.stderr)")
        // A hang detector, not a benchmark: it took 38 s before.
        #expect(seconds < TestTiming.scaled(10), "the crashed host took \(seconds) s to die")
        #expect(Self.hostLines(host.stderr) == [Self.crashLine], "stderr: \(host.stderr)")
        #expect(!host.stderr.contains("processed "), "a crashed host printed a summary: \(host.stderr)")
        // The record answered before the crash reached stdout.
        let records = try host.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.map(\.outcome) == ["success"], "\(host.stdout)")
        #expect(records.first?.params["result"] == "5", "\(host.stdout)")
    }

    @Test("xcallback-queue's host too", .enabled(if: TestPostgres.queueBuilt || ProcessInfo.processInfo.environment["CI"] != nil,
                                                 Comment(rawValue: TestPostgres.queueNotBuilt)),
          .scaledTimeLimit(minutes: 1))
    func queueBinary() throws {
        let fixture = try HostFixture(["Calculator", "Faulty"])
        let host = try Self.start(fixture, executable: Products.directory + "/xcallback-queue")
        let (status, seconds) = try Self.answerThenCrash(host)
        #expect(status == .signaled(SIGSEGV), "stderr: \(host.stderr)")
        #expect(seconds < TestTiming.scaled(10), "the crashed host took \(seconds) s to die")
        #expect(Self.hostLines(host.stderr) == [Self.crashLine], "stderr: \(host.stderr)")
    }

    @Test("abort() in a plug-in, with --log-format json: one JSON line naming SIGABRT and the plug-in",
          .scaledTimeLimit(minutes: 1))
    func abortInJSON() throws {
        let fixture = try HostFixture(["Calculator", "Faulty"])
        let host = try Self.start(fixture, ["--log-format", "json"])
        let (status, _) = try Self.answerThenCrash(host, crash: "faulty://x-callback-url/abort")
        #expect(status == .signaled(SIGABRT), "stderr: \(host.stderr)")
        let lines = Self.hostLines(host.stderr)
        try #require(lines.count == 1, "stderr: \(host.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "critical")
        #expect(object["label"] as? String == "xcallback")
        #expect(object["message"] as? String == "the host crashed (SIGABRT) while in-process plug-in 'faulty' handled "
            + "a request; run it with --isolation process to contain it")
        #expect((object["time"] as? String)?.hasSuffix("Z") == true, "\(lines[0])")
    }

    @Test("a fatal signal from another process is named with its sender, not blamed on a plug-in",
          .scaledTimeLimit(minutes: 1))
    func signalFromOutside() throws {
        let fixture = try HostFixture(["Calculator", "Faulty"])
        let host = try Self.start(fixture)
        #expect(host.write("calc://x-callback-url/add?lhs=2&rhs=3\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(10)), "no record; stderr: \(host.stderr)")
        host.send(signal: SIGBUS)
        #expect(host.waitForExit(timeout: TestTiming.scaled(20)) == .signaled(SIGBUS), "stderr: \(host.stderr)")
        #expect(Self.hostLines(host.stderr) == ["xcallback: the host was killed by SIGBUS from process \(getpid())"],
                "stderr: \(host.stderr)")
    }

    @Test("SWIFT_BACKTRACE set by the user: the runtime's report follows the line, once, and the host still dies by the signal",
          .scaledTimeLimit(minutes: 2))
    func backtraceWhenAsked() throws {
        let fixture = try HostFixture(["Calculator", "Faulty"])
        let host = try Self.start(fixture, environment: Self.environment(["SWIFT_BACKTRACE": "enable=yes,interactive=no"]))
        let (status, seconds) = try Self.answerThenCrash(host)
        #expect(status == .signaled(SIGSEGV), "stderr: \(host.stderr)")
        // The backtracer used to wait 16 times 2 s for the signal thread.
        #expect(seconds < TestTiming.scaled(20), "the crashed host took \(seconds) s to die")
        let lines = ChildProcess.lines(host.stderr)
        #expect(lines.filter { $0.hasPrefix("xcallback: ") } == [Self.crashLine], "stderr: \(host.stderr)")
        #expect(!host.stderr.contains("processed "), "a crashed host printed a summary: \(host.stderr)")
        #expect(host.stderr.contains("Program crashed"), "no backtrace: \(host.stderr)")
    }
}
