import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `run --queue --metrics` (docs/observability.md, "The queue"): each of
/// the queue's counters driven by the real event, in hosts consuming a real
/// PostgreSQL (TestPostgres), and read back through `/metrics`.
// Serialized, as QueueTests: each test holds hosts and leases for seconds.
@Suite("Queue metrics: claims, re-runs, dead requests and database errors", .ownThreads, .requires(.postgres),
       .serialized, .scaledTimeLimit(minutes: 3))
struct QueueMetricsTests {
    /// A host consuming `queue` with `--metrics` on a socket in its scratch
    /// folder, once that socket answers.
    static func startHost(_ fixture: HostFixture, _ queue: String, metrics: String, _ extra: [String] = []) throws -> ChildProcess {
        let host = try fixture.start(["--queue", queue, "--lease", "1", "--metrics", metrics, "--log-level", "info"] + extra,
                                     stdin: .null)
        try #require(waitForSocketListener(metrics, host: host), "stderr: \(host.stderr)")
        return host
    }

    static func queue(_ name: String) -> String { "xcallback_queue_\(name)_total" }

    static func stop(_ host: ChildProcess) {
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)")
    }

    @Test("claims, records and lease renewals counted; the oldest ready request's age, and 0 once it is taken")
    func claimsRecordsAndOldestReady() throws {
        let queue = try TestPostgres.initializedDatabase()
        let ids = try QueueTests.enqueue(queue, QueueTests.additions(21)).lines
        try #require(ids.count == 21)
        // The first request has waited 100 s, and a transaction holds it: a
        // claim skips it (SKIP LOCKED), the age reads it.
        try TestPostgres.psql(queue, "UPDATE xcallback.requests SET enqueued_at = now() - interval '100 seconds' WHERE id = \(ids[0])")
        let holder = try ChildProcess(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", queue],
                                      executable: "/usr/bin/env", stdin: .pipe)
        defer { holder.send(signal: SIGKILL) }
        #expect(holder.write("BEGIN;\nSELECT 'held ' || id FROM xcallback.requests WHERE id = \(ids[0]) FOR UPDATE;\n"))
        try #require(holder.waitForStdout(timeout: 30) { $0.contains("held \(ids[0])") }, "psql: \(holder.stderr)")

        let fixture = try HostFixture()
        let metrics = fixture.scratch.file("metrics.sock")
        let host = try Self.startHost(fixture, queue, metrics: metrics)
        #expect(host.waitForStdoutLines(20, timeout: 60), "\(host.stderr)")
        let (counted, samples) = Scrape.waitFor(unix: metrics, timeout: 30) { samples in
            samples[Self.queue("recorded")] == 20 && samples[Self.queue("lease_renewals")] ?? 0 >= 1
                && samples["xcallback_queue_oldest_ready_age_seconds"] ?? 0 >= 100
        }
        #expect(counted, "\(samples.filter { $0.key.hasPrefix("xcallback_queue") })")
        #expect(samples[Self.queue("claimed")] == 20)
        #expect(samples[Self.queue("reruns")] == 0)
        #expect(samples[Self.queue("fenced")] == 0)
        #expect(samples[Self.queue("dead")] == 0)
        #expect(samples["xcallback_queue_oldest_ready_age_seconds"] ?? 0 < 1_000, "the age, not a timestamp")
        #expect(samples["xcallback_input_lines_total{input=\"queue\"}"] == 20)
        for kind in ["connect", "claim", "record", "heartbeat", "listen"] {
            #expect(samples["xcallback_queue_database_errors_total{kind=\"\(kind)\"}"] == 0, "\(kind)")
        }
        if !Requirement.promtool.skips("promtool check metrics on a queue host's metrics") {
            let text = try #require(Scrape.body(unix: metrics))
            let check = try ChildProcess(["check", "metrics"], executable: PrometheusTests.promtool, stdin: .pipe)
            #expect(check.write(text))
            check.closeInput()
            #expect(check.waitForExit(timeout: 30) == .exited(0), "promtool: \(check.stdout) \(check.stderr)")
            #expect(check.stdout.isEmpty && check.stderr.isEmpty, "promtool: \(check.stdout) \(check.stderr)")
        }

        // Let it go: it is claimed and recorded, and nothing waits.
        #expect(holder.write("ROLLBACK;\n"))
        holder.closeInput()
        #expect(host.waitForStdoutLines(21, timeout: 30), "\(host.stderr)")
        let (drained, after) = Scrape.waitFor(unix: metrics, timeout: 30) { samples in
            samples[Self.queue("recorded")] == 21 && samples["xcallback_queue_oldest_ready_age_seconds"] == 0
        }
        #expect(drained, "\(after.filter { $0.key.hasPrefix("xcallback_queue") })")
        #expect(after[Self.queue("claimed")] == 21)
        Self.stop(host)
    }

    @Test("a host killed while it runs a request: the next host returns it to the queue and runs it again (a re-run), beside other work, then alone; killed running it alone, the fourth retires it dead")
    func rerunAndDead() throws {
        let queue = try TestPostgres.initializedDatabase()
        // One attempt: a request whose host dies while it runs alone is dead.
        let ids = try QueueTests.enqueue(queue, ["faulty://x-callback-url/hang"], ["--max-attempts", "1"]).lines
        try #require(ids.count == 1)
        let fixture = try HostFixture()  // in process: SIGKILL takes the handler with the host

        // The first host takes it, and is killed while it hangs there.
        let first = try fixture.start(["--queue", queue, "--lease", "1", "--timeout", "600"], stdin: .null)
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(30))
        while try QueueTests.status(queue)["leased"] != 1 && Date() < deadline { usleep(20_000) }
        try #require(try QueueTests.status(queue)["leased"] == 1, "\(first.stderr)")
        first.send(signal: SIGKILL)
        #expect(first.waitForExit(timeout: 30) == .signaled(SIGKILL))

        // The second returns it to the queue once the first's lease runs
        // out, and runs it again beside other work (attempt 2); the third
        // finds it held by a host that died running it so, and runs it
        // alone (attempt 3). Each is killed running it.
        for (round, name) in ["second", "third"].enumerated() {
            let metrics = fixture.scratch.file("\(name).sock")
            let host = try Self.startHost(fixture, queue, metrics: metrics, ["--timeout", "600"])
            let (rerun, samples) = Scrape.waitFor(unix: metrics, timeout: 30) { samples in
                samples[Self.queue("reruns")] == 1
            }
            #expect(rerun, "\(name): \(samples.filter { $0.key.hasPrefix("xcallback_queue") }) \(host.stderr)")
            #expect(samples[Self.queue("claimed")] == 1)
            #expect(samples[Self.queue("rescued")] == 1)
            #expect(samples[Self.queue("recorded")] == 0)
            #expect(samples[Self.queue("dead")] == 0)
            let alone = try TestPostgres.psql(queue, "SELECT alone FROM xcallback.requests")
            #expect(alone == (round == 0 ? "f" : "t"), "\(name)")
            host.send(signal: SIGKILL)
            #expect(host.waitForExit(timeout: 30) == .signaled(SIGKILL))
        }

        // The fourth finds it held by a host that died running it alone: out
        // of attempts, dead.
        let fourthMetrics = fixture.scratch.file("fourth.sock")
        let fourth = try Self.startHost(fixture, queue, metrics: fourthMetrics)
        let (dead, after) = Scrape.waitFor(unix: fourthMetrics, timeout: 30) { samples in
            samples[Self.queue("dead")] == 1
        }
        #expect(dead, "\(after.filter { $0.key.hasPrefix("xcallback_queue") }) \(fourth.stderr)")
        #expect(after[Self.queue("claimed")] == 0)
        #expect(after[Self.queue("rescued")] == 0)
        #expect(try xcallback(["queue", "dead", queue]).lines == ["\(ids[0])\t3\tfaulty://x-callback-url/hang"])
        Self.stop(fourth)
    }

    @Test("database errors by kind: records failing on a full disk, then recorded; no server at all, counted as connect")
    func databaseErrors() throws {
        let queue = try TestPostgres.initializedDatabase()
        // Writes to `outcomes` fail as a full disk does: claims and
        // heartbeats work.
        try QueueFailureTests.installDiskFull(queue, failing: true, tables: ["outcomes"], writes: "INSERT")
        _ = try QueueTests.enqueue(queue, QueueTests.additions(1))
        let fixture = try HostFixture()
        let metrics = fixture.scratch.file("metrics.sock")
        let host = try Self.startHost(fixture, queue, metrics: metrics)
        let (failing, samples) = Scrape.waitFor(unix: metrics, timeout: 30) { samples in
            samples["xcallback_queue_database_errors_total{kind=\"record\"}"] ?? 0 >= 1
        }
        #expect(failing, "\(samples.filter { $0.key.hasPrefix("xcallback_queue") }) \(host.stderr)")
        #expect(samples[Self.queue("claimed")] == 1)
        #expect(samples[Self.queue("recorded")] == 0)
        #expect(samples["xcallback_queue_database_errors_total{kind=\"claim\"}"] == 0)
        #expect(samples["xcallback_queue_database_errors_total{kind=\"connect\"}"] == 0)
        try TestPostgres.psql(queue, "UPDATE public.disk SET failing = false")
        #expect(host.waitForStdoutLines(1, timeout: 30), "\(host.stderr)")
        let (recorded, after) = Scrape.waitFor(unix: metrics, timeout: 30) { $0[Self.queue("recorded")] == 1 }
        #expect(recorded, "\(after.filter { $0.key.hasPrefix("xcallback_queue") })")
        Self.stop(host)

        // No server where the URL points: a host waiting for its database
        // counts each attempt to connect.
        let nowhere = "postgresql://xcallback@/postgres?host=\(fixture.scratch.path)/no-server"
        let waitingMetrics = fixture.scratch.file("waiting.sock")
        let waiting = try fixture.start(["--queue", nowhere, "--wait-for-database", "600", "--metrics", waitingMetrics],
                                        stdin: .null)
        try #require(waitForSocketListener(waitingMetrics, host: waiting), "stderr: \(waiting.stderr)")
        let (counted, connecting) = Scrape.waitFor(unix: waitingMetrics, timeout: 30) { samples in
            samples["xcallback_queue_database_errors_total{kind=\"connect\"}"] ?? 0 >= 2
        }
        #expect(counted, "\(connecting.filter { $0.key.hasPrefix("xcallback_queue") }) \(waiting.stderr)")
        waiting.send(signal: SIGTERM)
        #expect(waiting.waitForExit(timeout: 30) == .exited(0), "\(waiting.stderr)")
    }

    @Test("a host frozen past its lease: its outcome is fenced, and it counts the lease it lost")
    func fencedAndLeaseLost() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture(isolation: "process")
        _ = try QueueTests.enqueue(queue, ["faulty://x-callback-url/sleep?ms=2500"])
        let metrics = fixture.scratch.file("metrics.sock")
        let slow = try Self.startHost(fixture, queue, metrics: metrics)
        let other = try QueueTests.overtake(slow, fixture: fixture, queue: queue)
        let (counted, samples) = Scrape.waitFor(unix: metrics, timeout: 30) { samples in
            samples[Self.queue("fenced")] == 1 && samples[Self.queue("leases_lost")] ?? 0 >= 1
        }
        #expect(counted, "\(samples.filter { $0.key.hasPrefix("xcallback_queue") }) \(slow.stderr)")
        #expect(samples[Self.queue("claimed")] == 1)
        #expect(samples[Self.queue("recorded")] == 0)
        for host in [slow, other] { Self.stop(host) }
    }
}
