import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `run --metrics` (docs/observability.md): each metric family driven by
/// the real event in a running host, and read back through `/metrics`.
@Suite("Metrics: run --metrics and the events it counts", .ownThreads)
struct MetricsTests {
    /// A host on stdin with `--metrics` on a Unix socket in its scratch folder.
    final class Session: @unchecked Sendable {
        let fixture: HostFixture
        let host: ChildProcess
        let metrics: String
        private var answered = 0

        init(_ plugins: [String] = ["Calculator", "Faulty"], isolation: String = "process", output: String = "jsonl",
             arguments: [String] = []) throws {
            fixture = try HostFixture(plugins, isolation: isolation)
            metrics = fixture.scratch.file("metrics.sock")
            host = try fixture.start(["--output", output, "--metrics", metrics] + arguments, stdin: .pipe)
            try #require(waitForSocketListener(metrics, host: host), "stderr: \(host.stderr)")
        }

        @discardableResult
        func ask(_ line: String, timeout: Double = 10) throws -> Record {
            #expect(host.write(line + "\n"))
            answered += 1
            try #require(host.waitForStdoutLines(answered, timeout: TestTiming.scaled(timeout)),
                         "no record for \(line); stderr: \(host.stderr)")
            return try Record(jsonLine: host.stdoutLines[answered - 1])
        }

        /// The samples now (the records asked for are counted before they are written).
        func samples() throws -> [String: Double] {
            Scrape.samples(try #require(Scrape.body(unix: metrics), "no answer on \(metrics); stderr: \(host.stderr)"))
        }

        func finish() {
            host.closeInput()
            #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
            #expect(access(metrics, F_OK) != 0, "the metrics socket outlived the host")
        }
    }

    static func requests(_ plugin: String, _ outcome: String, code: String? = nil) -> String {
        "xcallback_requests_total{plugin=\"\(plugin)\",outcome=\"\(outcome)\"" + (code.map { ",code=\"\($0)\"" } ?? "") + "}"
    }

    @Test("outcomes by plug-in and code, latency, lines, bytes, records and invalid lines; OpenMetrics, 404 and bounds",
          .scaledTimeLimit(minutes: 1))
    func outcomesAndInputs() throws {
        let session = try Session()
        let lines = ["calc://x-callback-url/add?lhs=1&rhs=2", "calc://x-callback-url/add?lhs=1&rhs=2",
                     "calc://x-callback-url/add?lhs=1", "faulty://x-callback-url/sleep?ms=30", "not a url",
                     "nothing://x-callback-url/here"]
        for line in lines { try session.ask(line) }
        let samples = try session.samples()
        #expect(samples[Self.requests("calculator", "success")] == 2)
        #expect(samples[Self.requests("calculator", "error", code: "ParameterError")] == 1)
        #expect(samples[Self.requests("faulty", "success")] == 1)
        #expect(samples[Self.requests("(host)", "error", code: "InvalidURL")] == 1)
        #expect(samples[Self.requests("(host)", "error", code: "NotFoundAction")] == 1)
        // The 30 ms sleep is past the 25 ms bound, and within 1 s.
        #expect(samples["xcallback_request_duration_seconds_count{plugin=\"faulty\"}"] == 1)
        #expect(samples["xcallback_request_duration_seconds_bucket{plugin=\"faulty\",le=\"0.025\"}"] == 0)
        #expect(samples["xcallback_request_duration_seconds_bucket{plugin=\"faulty\",le=\"1\"}"] == 1)
        #expect((samples["xcallback_request_duration_seconds_sum{plugin=\"faulty\"}"] ?? 0) >= 0.02)
        #expect(samples["xcallback_input_lines_total{input=\"stdin\"}"] == 6)
        #expect(samples["xcallback_input_invalid_lines_total{input=\"stdin\"}"] == 1)
        #expect(samples["xcallback_output_records_total{input=\"stdin\"}"] == 6)
        #expect(samples["xcallback_input_bytes_total{input=\"stdin\"}"] == Double(lines.reduce(0) { $0 + $1.utf8.count + 1 }))
        #expect(samples["xcallback_requests_in_flight"] == 0)
        #expect(samples["xcallback_worker_starts_total{plugin=\"calculator\"}"] == 1)
        // The workers as the kernel counts them: some memory, some CPU time.
        #expect((samples["xcallback_worker_resident_memory_bytes{plugin=\"calculator\"}"] ?? 0) > 1_000_000, "\(samples)")
        #expect(samples["xcallback_worker_cpu_seconds_total{plugin=\"faulty\"}"].map { $0 >= 0 } == true, "\(samples)")
        #expect(samples.keys.contains { $0.hasPrefix("xcallback_build_info{version=\"") && $0.contains("isolation=\"process\"") })
        // No label carries request text.
        #expect(!samples.keys.contains { $0.contains("nothing") || $0.contains("lhs") || $0.contains("not a url") })

        let openMetrics = try #require(Scrape.response(unix: session.metrics,
                                                       request: Scrape.get(accept: "application/openmetrics-text; version=1.0.0")))
        #expect(openMetrics.contains("Content-Type: application/openmetrics-text; version=1.0.0"))
        #expect(openMetrics.hasSuffix("# EOF\n"))
        #expect(openMetrics.contains("# TYPE xcallback_requests counter\n"))
        let plain = try #require(Scrape.response(unix: session.metrics, request: Scrape.get()))
        #expect(plain.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(Scrape.response(unix: session.metrics, request: Scrape.get("/"))?.hasPrefix("HTTP/1.1 404") == true)
        #expect(Scrape.response(unix: session.metrics, request: "POST /metrics HTTP/1.1\r\n\r\n")?.hasPrefix("HTTP/1.1 405") == true)
        let huge = "GET /metrics HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000) + "\r\n\r\n"
        #expect(Scrape.response(unix: session.metrics, request: huge)?.hasPrefix("HTTP/1.1 431") == true)
        // A client that sends half a request and waits holds nothing up for long.
        let stalled = try #require(connectUnixSocket(session.metrics))
        defer { close(stalled) }
        _ = "GET /met".withCString { send(stalled, $0, 8, Int32(MSG_NOSIGNAL)) }
        #expect(Scrape.waitFor(unix: session.metrics, timeout: 10) { !$0.isEmpty }.held)
        session.finish()
    }

    @Test("requests in flight, by plug-in, wherever they wait: in a handler, kept by one, in a worker",
          .scaledTimeLimit(minutes: 1),
          // Records in `url` form let a worker's requests take its lane (`WorkerSlots`).
          arguments: [("none", "jsonl"), ("process", "jsonl"), ("process", "url")])
    func inFlight(isolation: String, output: String) throws {
        let session = try Session(["Faulty", "Calculator"], isolation: isolation, output: output,
                                  arguments: ["--timeout", "60", "--grace-period", "0.5"])
        let host = session.host
        let gauge = "xcallback_plugin_requests_in_flight{plugin=\"faulty\"}"
        #expect(host.write("calc://x-callback-url/add?lhs=1&rhs=1\n"))
        #expect(host.waitForStdoutLines(1, timeout: TestTiming.scaled(10)), "stderr: \(host.stderr)")
        #expect(try session.samples()[gauge] == 0)
        // A handler that never returns, one that returns and never
        // answers, and one that answers in a minute.
        for action in ["hang", "never", "sleep?ms=60000"] {
            #expect(host.write("faulty://x-callback-url/\(action)\n"))
        }
        let (held, samples) = Scrape.waitFor(unix: session.metrics) { $0[gauge] == 3 }
        #expect(held, "\(samples.filter { $0.key.contains("in_flight") })")
        #expect(samples["xcallback_plugin_requests_in_flight{plugin=\"calculator\"}"] == 0)
        // A stop ends all three at its grace period.
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
        let ended = host.stdoutLines.dropFirst()
        #expect(ended.count == 3 && ended.allSatisfy { $0.contains("Timeout") }, "stdout: \(host.stdout)")
    }

    @Test("a crash: PluginCrashed, one crash by cause, one restart", .scaledTimeLimit(minutes: 1))
    func crash() throws {
        let session = try Session(["Faulty"])
        #expect(try session.ask(RestartTests.crash).errorCode == "PluginCrashed")
        let (held, samples) = Scrape.waitFor(unix: session.metrics) {
            $0["xcallback_worker_restarts_total{plugin=\"faulty\"}"] == 1
        }
        #expect(held, "\(samples)")
        #expect(samples[Self.requests("faulty", "error", code: "PluginCrashed")] == 1)
        #expect(samples["xcallback_worker_crashes_total{plugin=\"faulty\",cause=\"crash\"}"] == 1)
        #expect(samples["xcallback_worker_starts_total{plugin=\"faulty\"}"] == 2)
        #expect(samples["xcallback_plugin_quarantined{plugin=\"faulty\"}"] == 0)
        session.finish()
    }

    @Test("a timeout: Timeout, and the hung worker replaced", .scaledTimeLimit(minutes: 1))
    func timeout() throws {
        let session = try Session(["Faulty"], arguments: ["--timeout", "0.5"])
        #expect(try session.ask("faulty://x-callback-url/hang").errorCode == "Timeout")
        let (held, samples) = Scrape.waitFor(unix: session.metrics) {
            $0["xcallback_worker_crashes_total{plugin=\"faulty\",cause=\"hang\"}"] == 1
        }
        #expect(held, "\(samples)")
        #expect(samples[Self.requests("faulty", "error", code: "Timeout")] == 1)
        #expect(samples["xcallback_request_duration_seconds_bucket{plugin=\"faulty\",le=\"0.25\"}"] == 0)
        #expect(samples["xcallback_request_duration_seconds_bucket{plugin=\"faulty\",le=\"1\"}"] == 1)
        session.finish()
    }

    @Test("a quarantine: counted, and the gauge says so until it ends", .scaledTimeLimit(minutes: 1))
    func quarantine() throws {
        let session = try Session(["Faulty"], arguments: ["--restart-limit", "1", "--quarantine", "1", "--timeout", "30"])
        #expect(try session.ask(RestartTests.crash).errorCode == "PluginCrashed")
        #expect(try session.ask(RestartTests.crash).errorCode == "PluginCrashed")
        #expect(try session.ask("faulty://x-callback-url/fail").errorCode == "PluginUnavailable")
        let samples = try session.samples()
        #expect(samples["xcallback_quarantines_total{plugin=\"faulty\"}"] == 1)
        #expect(samples["xcallback_plugin_quarantined{plugin=\"faulty\"}"] == 1)
        #expect(samples[Self.requests("faulty", "error", code: "PluginUnavailable")] == 1)
        #expect(samples["xcallback_worker_crashes_total{plugin=\"faulty\",cause=\"crash\"}"] == 2)
        // Its cool-down over, it is back.
        let (held, after) = Scrape.waitFor(unix: session.metrics) { $0["xcallback_plugin_quarantined{plugin=\"faulty\"}"] == 0 }
        #expect(held, "\(after)")
        #expect(after["xcallback_quarantines_total{plugin=\"faulty\"}"] == 1)
        session.finish()
    }

    @Test("a sandbox violation: counted by its system call, and as the worker's cause of death",
          .scaledTimeLimit(minutes: 2))
    func sandboxViolation() throws {
        let fixture = try Scratch()
        let metrics = fixture.file("metrics.sock")
        let session = try SandboxTests.AttackSession(arguments: ["--metrics", metrics])
        try #require(waitForSocketListener(metrics, host: session.host), "stderr: \(session.host.stderr)")
        SandboxTests.expectViolation(try session.attack("ptrace"), call: "ptrace")
        SandboxTests.expectViolation(try session.attack("ptrace"), call: "ptrace")
        SandboxTests.expectViolation(try session.attack("mount"), call: "mount")
        let samples = Scrape.samples(try #require(Scrape.body(unix: metrics)))
        #expect(samples["xcallback_sandbox_violations_total{plugin=\"attacker\",call=\"ptrace\"}"] == 2, "\(samples)")
        #expect(samples["xcallback_sandbox_violations_total{plugin=\"attacker\",call=\"mount\"}"] == 1)
        #expect(samples["xcallback_worker_crashes_total{plugin=\"attacker\",cause=\"sandbox\"}"] == 3)
        #expect(samples[Self.requests("attacker", "error", code: "SandboxViolation")] == 3)
        #expect(samples["xcallback_plugin_sandboxed{plugin=\"attacker\"}"] == 1)
        session.host.closeInput()
        #expect(session.host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0))
    }

    @Test("socket connections: open while served, refused past the limit (Busy), and their records",
          .scaledTimeLimit(minutes: 1))
    func connections() throws {
        let fixture = try HostFixture(["Calculator"])
        let path = fixture.scratch.file("host.sock")
        let metrics = fixture.scratch.file("metrics.sock")
        let host = try fixture.start(["--socket", path, "--metrics", metrics], stdin: .null)
        try #require(waitForSocketListener(path, host: host), "stderr: \(host.stderr)")
        try #require(waitForSocketListener(metrics, host: host), "stderr: \(host.stderr)")
        #expect(try exchangeOverSocket(path, lines: ["calc://x-callback-url/add?lhs=1&rhs=2"]) == ["success?result=3"])
        // One process may hold 64 at once; the rest are told Busy.
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        for _ in 0..<70 {
            guard let connection = connectUnixSocket(path) else { break }
            held.append(connection)
        }
        // Each of the 70 is either served (open) or refused, once the host got to it.
        let refusedKey = "xcallback_input_connections_refused_total{input=\"socket\",reason=\"busy\"}"
        let openKey = "xcallback_input_connections_open{input=\"socket\"}"
        let (reached, samples) = Scrape.waitFor(unix: metrics) { ($0[refusedKey] ?? 0) + ($0[openKey] ?? 0) == 70 }
        #expect(reached, "\(samples)")
        #expect((samples[refusedKey] ?? 0) >= 6, "\(samples)")
        #expect((samples[openKey] ?? 0) <= 64, "\(samples)")
        #expect(samples[Self.requests("calculator", "success")] == 1)
        #expect(samples["xcallback_output_records_total{input=\"socket\"}"] == 1)
        #expect(samples["xcallback_input_lines_total{input=\"socket\"}"] == 1)
        held.forEach { close($0) }
        held = []
        let (closed, after) = Scrape.waitFor(unix: metrics) { $0["xcallback_input_connections_open{input=\"socket\"}"] == 0 }
        #expect(closed, "\(after)")
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 20) == .exited(0), "stderr: \(host.stderr)")
    }

    @Test("TCP: --metrics 127.0.0.1:0 listens on a free port and says which", .scaledTimeLimit(minutes: 1))
    func tcp() throws {
        let fixture = try HostFixture(["Calculator"])
        let host = try fixture.start(["--metrics", "127.0.0.1:0", "--log-level", "notice"], stdin: .pipe)
        try #require(host.waitForStderr(containing: "serving metrics at 127.0.0.1:", timeout: TestTiming.scaled(10)),
                     "stderr: \(host.stderr)")
        let port = try #require(Self.port(in: host.stderr))
        #expect(host.write("calc://x-callback-url/add?lhs=1&rhs=2\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(10)))
        let samples = Scrape.samples(try #require(Scrape.body(port: port)))
        #expect(samples[Self.requests("calculator", "success")] == 1)
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0))
    }

    static func port(in stderr: String) -> UInt16? {
        guard let range = stderr.range(of: "serving metrics at 127.0.0.1:") else { return nil }
        return UInt16(stderr[range.upperBound...].prefix { $0.isNumber })
    }

    @Test("off by default: no socket, and a bad address is a usage error")
    func offByDefault() throws {
        let fixture = try HostFixture(["Calculator"])
        let result = try fixture.run([], lines: ["calc://x-callback-url/add?lhs=1&rhs=2"])
        #expect(result.status == .exited(0))
        let bad = try fixture.run(["--metrics", "nowhere"], lines: [])
        #expect(bad.status == .exited(64), "\(bad.stderr)")
        #expect(bad.stderr.contains("HOST:PORT"))
    }
}
