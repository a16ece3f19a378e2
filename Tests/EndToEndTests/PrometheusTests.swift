import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Requirement {
    static let promtool = Requirement("needs promtool: apt-get install prometheus") { promtoolProblem }
    private static let promtoolProblem = toolProblem(["/usr/bin/promtool", "--version"])
    static let prometheus = Requirement("needs the Prometheus server: apt-get install prometheus") { prometheusProblem }
    private static let prometheusProblem = toolProblem(["/usr/bin/prometheus", "--version"])
    static let script = Requirement("needs util-linux's script for a pseudo-terminal: apt-get install util-linux") {
        scriptProblem
    }
    private static let scriptProblem = toolProblem(["/usr/bin/script", "--version"])
}

/// The metrics as Prometheus itself reads them (Debian's `prometheus`
/// package: `promtool` and the server). Skipped, saying so, where it is
/// not installed; under CI, which installs it, that fails instead.
@Suite("Prometheus: promtool and a real server scraping a host", .ownThreads, .serialized)
struct PrometheusTests {
    static let promtool = "/usr/bin/promtool"
    static let server = "/usr/bin/prometheus"

    @Test("promtool check metrics finds nothing to say of the text format", .requires(.promtool),
          .scaledTimeLimit(minutes: 1))
    func promtoolCheck() throws {
        let session = try MetricsTests.Session()
        for line in ["calc://x-callback-url/add?lhs=1&rhs=2", "calc://x-callback-url/add?lhs=1", "no url",
                     RestartTests.crash, "faulty://x-callback-url/sleep?ms=5"] {
            try session.ask(line)
        }
        let text = try #require(Scrape.body(unix: session.metrics))
        let check = try ChildProcess(["check", "metrics"], executable: Self.promtool, stdin: .pipe)
        #expect(check.write(text))
        check.closeInput()
        #expect(check.waitForExit(timeout: TestTiming.scaled(30)) == .exited(0), "promtool: \(check.stdout) \(check.stderr)")
        #expect(check.stdout.isEmpty && check.stderr.isEmpty, "promtool: \(check.stdout) \(check.stderr)")
        session.finish()
    }

    @Test("a Prometheus server scraping a host under load: its query API returns the host's request count",
          .requires(.prometheus), .scaledTimeLimit(minutes: 2))
    func realServer() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        let host = try fixture.start(["--metrics", "127.0.0.1:0", "--log-level", "notice"], stdin: .pipe)
        try #require(host.waitForStderr(containing: "serving metrics at 127.0.0.1:", timeout: TestTiming.scaled(10)),
                     "stderr: \(host.stderr)")
        let metricsPort = try #require(MetricsTests.port(in: host.stderr))
        let (probe, serverPort) = try SandboxTests.listener()
        close(probe)
        let config = fixture.scratch.file("prometheus.yml")
        try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: xcallback
                static_configs:
                  - targets: ['127.0.0.1:\(metricsPort)']
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let prometheus = try ChildProcess(
            ["--config.file=\(config)", "--storage.tsdb.path=\(fixture.scratch.file("tsdb"))",
             "--web.listen-address=127.0.0.1:\(serverPort)", "--log.level=warn"],
            executable: Self.server)
        defer {
            prometheus.send(signal: SIGTERM)
            _ = prometheus.waitForExit(timeout: TestTiming.scaled(20))
        }
        // Load: bursts of requests while the server scrapes every second.
        let total = 20_000
        for burst in 0..<20 {
            let lines = (0..<(total / 20)).map { "calc://x-callback-url/add?lhs=\(burst)&rhs=\($0)\n" }.joined()
            #expect(host.write(lines))
            try #require(host.waitForStdoutLines((burst + 1) * total / 20, timeout: TestTiming.scaled(30)),
                         "stderr: \(host.stderr)")
        }
        let answered = host.stdoutLines.filter { $0.hasPrefix("success?") }.count
        #expect(answered == total)
        // The server's own count reaches the host's, once it scraped after the last record.
        let query = "sum(xcallback_requests_total{plugin=\"calculator\"})"
        let deadline = Date().addingTimeInterval(TestTiming.scaled(30))
        var seen: Double?
        while Date() < deadline {
            seen = Self.query(query, port: serverPort)
            if seen == Double(answered) { break }
            usleep(200_000)
        }
        #expect(seen == Double(answered), "Prometheus says \(String(describing: seen)); stderr: \(prometheus.stderr)")
        #expect(Self.query("up{job=\"xcallback\"}", port: serverPort) == 1)
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
    }

    /// One value of an instant query through the server's HTTP API.
    static func query(_ expression: String, port: UInt16) -> Double? {
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
        guard let response = Scrape.response(port: port, request: Scrape.get("/api/v1/query?query=\(encoded)")),
              let split = response.range(of: "\r\n\r\n"),
              let object = try? JSONSerialization.jsonObject(with: Data(response[split.upperBound...].utf8)) as? [String: Any],
              let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
              let value = result.first?["value"] as? [Any], value.count == 2, let text = value[1] as? String
        else { return nil }
        return Double(text)
    }
}
