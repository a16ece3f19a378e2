import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/queue.md, "What happens when something fails": a database that
/// fails every statement is backed off from and logged a bounded number of
/// times; a database that cannot be reached is said in words a person can
/// act on; `--wait-for-database` starts a host before its database.
@Suite("Queue: failures, back-off and messages", .ownThreads,
       .requires(.postgres), .scaledTimeLimit(minutes: 3))
struct QueueFailureTests {
    /// Makes writes to the queue's tables fail as a full disk does
    /// (SQLSTATE 53100) while `public.disk.failing` is true (from `failing`):
    /// reads work, connections open. By default every claim, heartbeat and
    /// record fails; `tables` and `writes` narrow it (only `outcomes`'
    /// inserts: claims and heartbeats work, records fail).
    static func installDiskFull(_ queue: String, failing: Bool = false,
                                tables: [String] = ["requests", "hosts", "outcomes"],
                                writes: String = "INSERT OR UPDATE OR DELETE") throws {
        let triggers = tables.map { table in
            """
            CREATE TRIGGER disk_full BEFORE \(writes) ON xcallback.\(table)
                FOR EACH STATEMENT EXECUTE FUNCTION public.disk_full();
            """
        }.joined(separator: "\n")
        try TestPostgres.psql(queue, """
            CREATE TABLE public.disk (failing boolean NOT NULL);
            INSERT INTO public.disk VALUES (\(failing));
            CREATE FUNCTION public.disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF (SELECT failing FROM public.disk) THEN
                    RAISE EXCEPTION 'could not extend file "base/1/2": No space left on device' USING ERRCODE = 'disk_full';
                END IF;
                RETURN NULL;
            END $$;
            \(triggers)
            """)
    }

    /// Log lines about failing queue statements.
    static func failureLines(_ stderr: String) -> [String] {
        stderr.split(separator: "\n").map(String.init).filter { $0.contains("queue: ") && ($0.contains(" failed: ") || $0.contains("still failing")) }
    }

    @Test("every statement failing (a full disk, 53100): the host backs off, says so a bounded number of times with a count, and says when it works again, at the default log level")
    func everyStatementFailing() async throws {
        let queue = try await offCooperativePool { try TestPostgres.initializedDatabase() }
        try await offCooperativePool { try Self.installDiskFull(queue) }
        let fixture = try HostFixture()
        // The default log level: what an operator sees without asking.
        let host = try fixture.start(["--queue", queue, "--lease", "2"], stdin: .null)
        defer { host.send(signal: SIGKILL) }
        let first = try await offCooperativePool { try QueueTests.enqueue(queue, QueueTests.additions(1)) }
        try #require(first.status == .exited(0), "\(first.stderr)")
        try #require(await host.awaitStdoutLines(1, timeout: TestTiming.scaled(30)), "the host never consumed: \(host.stderr)")

        _ = try await offCooperativePool { try TestPostgres.psql(queue, "UPDATE public.disk SET failing = true") }
        let failingSince = Date()
        // The first report of the repeats comes 10 s into the run of failures.
        let counted = await offCooperativePool {
            host.waitForStderr(containing: "still failing", timeout: TestTiming.scaled(40))
        }
        #expect(counted, "no count of the repeated failures: \(host.stderr)")
        _ = try await offCooperativePool { try TestPostgres.psql(queue, "UPDATE public.disk SET failing = false") }
        let failingFor = Date().timeIntervalSince(failingSince)

        let second = try await offCooperativePool { try QueueTests.enqueue(queue, QueueTests.additions(1, from: 1)) }
        #expect(second.status == .exited(0), "\(second.stderr)")
        #expect(await host.awaitStdoutLines(2, timeout: TestTiming.scaled(30)), "no record after the disk came back: \(host.stderr)")
        let recovered = await offCooperativePool { host.waitForStderr(containing: "works again after", timeout: TestTiming.scaled(10)) }
        #expect(recovered, "recovery not logged at the default level: \(host.stderr)")

        let lines = Self.failureLines(host.stderr)
        // Claim, heartbeat and record connections: each says its first
        // failure, then a count after 10 s, 30 s, 70 s … Before, each
        // reconnect reset the back-off: about 50 lines a second.
        let bound = 3 * (2 + Int(log2(max(failingFor, 10) / 10)))
        print("every statement failing for \(String(format: "%.1f", failingFor)) s: \(lines.count) failure line(s) (bound \(bound))")
        #expect(lines.count <= bound, "\(lines.count) failure lines in \(failingFor) s: \(host.stderr)")
        #expect(lines.contains { $0.contains("53100") }, "\(host.stderr)")
        #expect(host.stderr.contains(" failed attempt(s) over "), "\(host.stderr)")

        let (status, _) = await host.stopAndTimeExit(signal: SIGTERM, timeout: TestTiming.scaled(30))
        #expect(status == .exited(0), "\(host.stderr)")
    }

    @Test("no server where the URL points: the message names the socket path or host and port, the user and the database, and what to check")
    func unreachableSaysWhatWasTried() throws {
        let fixture = try HostFixture()
        let folder = "\(fixture.scratch.path)/no-such-folder"
        let overSocket = try xcallback(fixture.runPrefix + ["--queue", "postgresql://someone@/nowhere?host=\(folder)"], timeout: 30)
        #expect(overSocket.status == .exited(1))
        #expect(overSocket.stderr.contains("cannot connect to PostgreSQL on the Unix socket \(folder)/.s.PGSQL.5432 as user someone, database nowhere: no such socket file"),
                "\(overSocket.stderr)")
        #expect(overSocket.stderr.contains("Check that the server is running"), "\(overSocket.stderr)")

        let overTCP = try xcallback(["queue", "status", "postgresql://someone@127.0.0.1:1/nowhere"], timeout: 30)
        #expect(overTCP.status == .exited(1))
        #expect(overTCP.stderr.contains("cannot connect to PostgreSQL on host 127.0.0.1, port 1, as user someone, database nowhere: the connection was refused"),
                "\(overTCP.stderr)")
        #expect(overTCP.stderr.contains("listen_addresses"), "\(overTCP.stderr)")
        for text in [overSocket.stderr, overTCP.stderr] {
            #expect(!text.contains("errno") && !text.contains("SingleConnectionFailure") && !text.contains("descriptor:"), "\(text)")
        }
    }

    @Test("--wait-for-database SECONDS with no server: it keeps trying that long, then exits 1 with the same message; SIGTERM ends the wait, exit 0")
    func waitGivesUp() async throws {
        let fixture = try HostFixture()
        let url = "postgresql://someone@/nowhere?host=\(fixture.scratch.path)/no-such-folder"
        let started = Date()
        let waited = try await offCooperativePool {
            try xcallback(fixture.runPrefix + ["--queue", url, "--wait-for-database", "2"], timeout: TestTiming.scaled(60))
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(waited.status == .exited(1), "\(waited.stderr)")
        #expect(seconds >= 2, "gave up after \(seconds) s")
        #expect(waited.stderr.contains("waiting up to"), "\(waited.stderr)")
        #expect(waited.stderr.contains("cannot use the queue: cannot connect to PostgreSQL on the Unix socket"), "\(waited.stderr)")
        print("--wait-for-database 2 with no server: exit 1 after \(String(format: "%.2f", seconds)) s")

        let host = try fixture.start(["--queue", url, "--wait-for-database", "600"], stdin: .null)
        defer { host.send(signal: SIGKILL) }
        let waiting = await offCooperativePool { host.waitForStderr(containing: "waiting up to", timeout: TestTiming.scaled(30)) }
        try #require(waiting, "\(host.stderr)")
        let (status, stopped) = await host.stopAndTimeExit(signal: SIGTERM, timeout: TestTiming.scaled(30))
        #expect(status == .exited(0), "\(host.stderr)")
        #expect((stopped ?? .infinity) < TestTiming.scaled(5), "SIGTERM while waiting took \(stopped.map { "\($0) s" } ?? "too long")")
    }

    @Test("--wait-for-database: a host and queue status started before their database go on once it is up")
    func waitForDatabase() async throws {
        let server = try await offCooperativePool { try QueueStopTests.PrivateServer() }
        let queue = server.url
        let initialised = try await offCooperativePool { try xcallback(["queue", "init", queue]) }
        try #require(initialised.status == .exited(0), "\(initialised.stderr)")
        let enqueued = try await offCooperativePool { try QueueTests.enqueue(queue, QueueTests.additions(3)) }
        try #require(enqueued.status == .exited(0), "\(enqueued.stderr)")
        await offCooperativePool { server.stop() }

        let fixture = try HostFixture()
        let host = try fixture.start(["--queue", queue, "--lease", "2", "--wait-for-database", "120"], stdin: .null)
        defer { host.send(signal: SIGKILL) }
        let status = try ChildProcess(["queue", "status", queue, "--json", "--wait-for-database", "120"])
        defer { status.send(signal: SIGKILL) }
        let waiting = await offCooperativePool {
            host.waitForStderr(containing: "waiting up to", timeout: TestTiming.scaled(30))
                && status.waitForStderr(containing: "waiting up to", timeout: TestTiming.scaled(30))
        }
        try #require(waiting, "host: \(host.stderr)\nstatus: \(status.stderr)")
        #expect(!host.hasExited, "\(host.stderr)")

        try await offCooperativePool { try server.resume() }
        #expect(await status.awaitExit(timeout: TestTiming.scaled(30)) == .exited(0), "\(status.stderr)")
        #expect(status.stdout.contains(#""ready":"#), "\(status.stdout)")
        #expect(await host.awaitStdoutLines(3, timeout: TestTiming.scaled(60)), "no records once the database was up: \(host.stderr)")
        #expect(host.stderr.contains("works again after"), "\(host.stderr)")
        let (exit, _) = await host.stopAndTimeExit(signal: SIGTERM, timeout: TestTiming.scaled(30))
        #expect(exit == .exited(0), "\(host.stderr)")
    }

    @Test("queue status on an empty queue: oldest_ready_seconds is null in JSON, - in text; a ready request gives a number")
    func emptyQueueHasNoOldestAge() throws {
        let queue = try TestPostgres.initializedDatabase()
        let empty = try xcallback(["queue", "status", queue, "--json"])
        #expect(empty.status == .exited(0), "\(empty.stderr)")
        #expect(empty.stdout.contains(#""oldest_ready_seconds":null"#), "\(empty.stdout)")
        let text = try xcallback(["queue", "status", queue])
        #expect(text.stdout.contains("oldest ready  -"), "\(text.stdout)")
        _ = try QueueTests.enqueue(queue, QueueTests.additions(1))
        let object = try JSONSerialization.jsonObject(with: Data(try xcallback(["queue", "status", queue, "--json"]).stdout.utf8)) as? [String: Any]
        #expect(object?["oldest_ready_seconds"] is Double, "\(String(describing: object))")
    }

    @Test("enqueue and outcomes take --log-level like the other queue commands")
    func logLevelEverywhere() throws {
        let queue = try TestPostgres.initializedDatabase()
        let enqueued = try QueueTests.enqueue(queue, QueueTests.additions(1), ["--log-level", "debug"])
        #expect(enqueued.status == .exited(0), "\(enqueued.stderr)")
        #expect(enqueued.lines.count == 1)
        let outcomes = try xcallback(["outcomes", "--queue", queue, "--log-level", "error"])
        #expect(outcomes.status == .exited(0), "\(outcomes.stderr)")
        let bad = try xcallback(["enqueue", "--queue", queue, "--log-level", "loud"], lines: [])
        #expect(bad.status == .exited(64), "\(bad.stderr)")
    }

    @Test("queue prune on a terminal shows the running count of deleted outcomes, then clears it")
    func pruneShowsProgress() throws {
        let script = "/usr/bin/script"
        guard FileManager.default.isExecutableFile(atPath: script) else {
            if ProcessInfo.processInfo.environment["CI"] != nil { Issue.record("script(1) is missing: apt-get install bsdutils") }
            print("skipped: script(1), which gives prune a terminal, is missing (apt-get install bsdutils)")
            return
        }
        let queue = try TestPostgres.initializedDatabase()
        // 12,000 outcomes a day old: three batches of 5,000 at most.
        try TestPostgres.psql(queue, """
            INSERT INTO xcallback.outcomes (request_id, line, outcome, params, attempts, host, enqueued_at, recorded_at)
            SELECT i, 'calc://x-callback-url/add?lhs=1&rhs=1', 'success', '', 1, 'test', now() - interval '1 day', now() - interval '1 day'
            FROM generate_series(1, 12000) AS i
            """)
        let command = ([Products.xcallback, "queue", "prune", queue, "--retention", "60"]).map { "'\($0)'" }.joined(separator: " ")
        let run = try ChildProcess(["-qec", command, "/dev/null"], executable: script)
        #expect(run.waitForExit(timeout: TestTiming.scaled(60)) == .exited(0), "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("queue prune: 5000 outcome(s) deleted so far"), "\(run.stdout)")
        #expect(run.stdout.contains("queue prune: 10000 outcome(s) deleted so far"), "\(run.stdout)")
        #expect(run.stdout.contains("\r\u{1B}[Kpruned 12000 outcome(s)"), "\(run.stdout.debugDescription)")
        #expect(try QueueTests.status(queue)["done"] == 0)

        // Not a terminal, and quick: only the result.
        let quiet = try xcallback(["queue", "prune", queue, "--retention", "60"])
        #expect(quiet.stdout == "pruned 0 outcome(s)\n" && quiet.stderr.isEmpty, "\(quiet.stdout)\(quiet.stderr)")
    }
}
