import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The durable queue end to end: the built binary against a real PostgreSQL
/// (TestPostgres). Hosts run with short leases so that a host's death is
/// noticed within seconds.
// Serialized: its tests block a test thread for seconds each (hosts, leases
// running out), and Swift Testing starts every test's time limit when it
// schedules it; run side by side they starved the rest of the suite.
@Suite("Durable queue on PostgreSQL", .ownThreads, .requires(.postgres),
       .serialized, .scaledTimeLimit(minutes: 3))
struct QueueTests {
    /// `count` Calculator additions: request i adds i and 1.
    static func additions(_ count: Int, from start: Int = 0) -> [String] {
        (start..<(start + count)).map { "calc://x-callback-url/add?lhs=\($0)&rhs=1" }
    }

    /// A host consuming `queue` with these plug-ins.
    static func startHost(_ fixture: HostFixture, _ queue: String, _ extra: [String] = []) throws -> ChildProcess {
        try fixture.start(["--queue", queue, "--lease", "2", "--log-level", "info"] + extra, stdin: .null)
    }

    static func enqueue(_ queue: String, _ lines: [String], _ extra: [String] = []) throws -> RunResult {
        try xcallback(["enqueue", "--queue", queue] + extra, lines: lines, timeout: 60)
    }

    /// `queue status --json`'s numbers (a null, the oldest ready age of an
    /// empty queue, is left out).
    static func status(_ queue: String) throws -> [String: Double] {
        let result = try xcallback(["queue", "status", queue, "--json"])
        guard result.status == .exited(0),
              let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        else { throw HarnessError("queue status failed: \(result.stderr)") }
        return object.compactMapValues { $0 as? Double }
    }

    @Test("queue init creates the schema once; a second init, even at the same time as a third, changes nothing")
    func initIsIdempotent() throws {
        let queue = try TestPostgres.database()
        let first = try ChildProcess(["queue", "init", queue])
        let second = try ChildProcess(["queue", "init", queue])
        #expect(first.waitForExit(timeout: 60) == .exited(0), "\(first.stderr)")
        #expect(second.waitForExit(timeout: 60) == .exited(0), "\(second.stderr)")
        let outputs = [first.stdout, second.stdout]
        #expect(outputs.filter { $0.contains("applied 1") }.count == 1, "\(outputs)")
        let again = try xcallback(["queue", "init", queue])
        #expect(again.status == .exited(0))
        #expect(again.stdout.contains("up to date"))
        #expect(try Self.status(queue) == ["ready": 0, "leased": 0, "done": 0, "dead": 0, "hosts": 0])
    }

    @Test("queue init takes a schema at version 2 to 4: record_outcomes finds requests by primary key, and writes go through functions")
    func migratesFromVersion2() throws {
        let queue = try TestPostgres.database()
        #expect(try xcallback(["queue", "init", queue]).status == .exited(0))
        // Back to version 2: no functions of version 4, no login column; its
        // record_outcomes (leased_by without + 0); no rows for 3 and 4. A
        // host row and a request waiting, left from before.
        let function = "xcallback.record_outcomes(int8[], int4[], int8[], text[], text[], text[], text)"
        _ = try TestPostgres.psql(queue, """
            DROP FUNCTION xcallback.register_host(text, float8), xcallback.heartbeat(int8, float8),
                xcallback.claim(int8, int4, float8), xcallback.claim_beside(int8, int4, float8),
                xcallback.claim_suspect(int8, float8),
                xcallback.release(int8[], int4[], int8[]), xcallback.unregister_host(int8), xcallback.rescue(),
                xcallback.enqueue(text[], text[], int4);
            DO $$ BEGIN EXECUTE regexp_replace(replace(pg_get_functiondef('\(function)'::regprocedure),
                'leased_by + 0', 'leased_by'), '\\s*(WHERE|AND) b.host IN \\(SELECT h.id FROM [^)]*\\)', ''); END $$;
            ALTER TABLE xcallback.hosts DROP COLUMN login;
            ALTER TABLE xcallback.requests DROP COLUMN beside, DROP COLUMN isolate;
            DELETE FROM xcallback.schema_migrations WHERE version >= 3;
            INSERT INTO xcallback.hosts (id, name, expires_at) VALUES (7, 'old:1', now() + interval '1 hour');
            INSERT INTO xcallback.requests (id, line, max_attempts) VALUES (nextval('xcallback.request_ids'), 'calc://x-callback-url/add?lhs=1&rhs=1', 3)
            """)
        // A host role of version 3's grants (cluster-wide: this process's own name).
        let oldHost = "xcb_old_host_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        _ = try TestPostgres.psql(queue, """
            CREATE ROLE \(oldHost) NOLOGIN;
            GRANT USAGE ON SCHEMA xcallback TO \(oldHost);
            GRANT SELECT ON ALL TABLES IN SCHEMA xcallback TO \(oldHost);
            GRANT INSERT, DELETE, UPDATE (expires_at) ON xcallback.hosts TO \(oldHost);
            GRANT UPDATE (leased_by, attempt, leased_at, alone, suspect, strikes) ON xcallback.requests TO \(oldHost);
            GRANT USAGE ON SEQUENCE xcallback.request_ids TO \(oldHost)
            """)
        let source = "SELECT prosrc LIKE '%leased_by + 0%' FROM pg_proc WHERE oid = '\(function)'::regprocedure"
        #expect(try TestPostgres.psql(queue, source) == "f")
        let migrated = try xcallback(["queue", "init", queue])
        #expect(migrated.status == .exited(0) && migrated.stdout.contains("applied 3, 4"), "\(migrated.stdout)\(migrated.stderr)")
        #expect(try TestPostgres.psql(queue, source) == "t")
        #expect(try TestPostgres.psql(queue, "SELECT max(version) FROM xcallback.schema_migrations") == "4")
        #expect(try TestPostgres.psql(queue, "SELECT login FROM xcallback.hosts WHERE id = 7") == "xcallback")
        // That role writes nothing any more, even before the new grants are run; it still reads.
        #expect(try TestPostgres.psql(queue, """
            SELECT has_column_privilege('\(oldHost)', 'xcallback.requests', 'leased_by', 'UPDATE'),
                   has_table_privilege('\(oldHost)', 'xcallback.hosts', 'INSERT'),
                   has_table_privilege('\(oldHost)', 'xcallback.hosts', 'DELETE'),
                   has_sequence_privilege('\(oldHost)', 'xcallback.request_ids', 'USAGE'),
                   has_table_privilege('\(oldHost)', 'xcallback.requests', 'SELECT')
            """) == "f|f|f|f|t")
        // The queue works as before: the request left waiting is run.
        let fixture = try HostFixture()
        let host = try Self.startHost(fixture, queue, ["--output", "jsonl"])
        #expect(host.waitForStdoutLines(1, timeout: 60), "\(host.stderr)")
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)")
        #expect(try Self.status(queue)["done"] == 1)
    }

    @Test("a queue that was never initialised is an error that says how to create it")
    func uninitialised() throws {
        let queue = try TestPostgres.database()
        let result = try Self.enqueue(queue, Self.additions(1))
        #expect(result.status == .exited(1))
        #expect(result.stderr.contains("xcallback queue init"), "\(result.stderr)")
    }

    @Test("enqueue prints one id per line; an invalid line is reported by number and the lines around it are kept")
    func enqueueKeepsValidLines() throws {
        let queue = try TestPostgres.initializedDatabase()
        let lines = ["calc://x-callback-url/add?lhs=1&rhs=2", "# a comment", "", "not a url",
                     "calc://x-callback-url/add?lhs=3&rhs=4"]
        let result = try Self.enqueue(queue, lines)
        #expect(result.status == .exited(1))
        #expect(result.lines.count == 2)
        #expect(result.lines.allSatisfy { Int($0) != nil })
        #expect(result.stderr.contains("stdin:4: invalid URL"), "\(result.stderr)")
        #expect(try Self.status(queue)["ready"] == 2)
    }

    @Test("a line KEY<TAB>URL is enqueued once per key: a re-sent line prints the first id and adds nothing")
    func idempotencyKeys() throws {
        let queue = try TestPostgres.initializedDatabase()
        let first = try Self.enqueue(queue, ["order-1\tcalc://x-callback-url/add?lhs=1&rhs=1",
                                             "order-2\tcalc://x-callback-url/add?lhs=2&rhs=2",
                                             "order-1\tcalc://x-callback-url/add?lhs=9&rhs=9"])
        #expect(first.status == .exited(0), "\(first.stderr)")
        #expect(first.lines.count == 3)
        #expect(first.lines[0] == first.lines[2])
        let again = try Self.enqueue(queue, ["order-2\tcalc://x-callback-url/add?lhs=2&rhs=2"])
        #expect(again.lines == [first.lines[1]])
        #expect(try Self.status(queue)["ready"] == 2)
    }

    @Test("two hosts consume one queue: every request has exactly one recorded outcome, written by the host that recorded it",
          arguments: ["none", "process"])
    func twoHostsShareAQueue(isolation: String) throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture(isolation: isolation)
        let count = 1_000
        let enqueued = try Self.enqueue(queue, Self.additions(count))
        #expect(enqueued.status == .exited(0), "\(enqueued.stderr)")
        let hosts = [try Self.startHost(fixture, queue), try Self.startHost(fixture, queue)]
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(90))
        while hosts.map(\.stdoutLines.count).reduce(0, +) < count && Date() < deadline {
            _ = hosts[0].waitForStdoutLines(count, timeout: 0.2)
        }
        for host in hosts { host.send(signal: SIGTERM) }
        for host in hosts { #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)") }
        let written = hosts.flatMap(\.stdoutLines)
        #expect(written.count == count, "\(hosts.map(\.stderr))")
        #expect(Set(written) == Set((0..<count).map { "success?result=\($0 + 1)" }))

        let recorded = try xcallback(["outcomes", "--queue", queue])
        #expect(recorded.lines.count == count)
        #expect(recorded.lines.sorted() == written.sorted())
        let status = try Self.status(queue)
        #expect(status["done"] == Double(count) && status["ready"] == 0 && status["leased"] == 0 && status["hosts"] == 0)
    }

    @Test("a password in the queue's URL is not in the running process's command line (ps)")
    func passwordOutOfSight() async throws {
        let queue = try TestPostgres.initializedDatabase()
        // The test server trusts its socket, so any password is accepted.
        let withPassword = queue.replacingOccurrences(of: "@/", with: ":s3cret-pw@/")
        try #require(withPassword != queue && queue.hasPrefix("postgresql://"), "\(queue)")
        let follower = try ChildProcess(["outcomes", "--queue", withPassword, "--follow"])
        defer { follower.send(signal: SIGKILL) }
        // Scrubbed once the arguments are read; the host then keeps running.
        let scrubbed = await offCooperativePool { () -> String in
            var commandLine = ""
            for _ in 0..<200 {
                guard let bytes = FileManager.default.contents(atPath: "/proc/\(follower.pid)/cmdline") else { break }
                commandLine = String(decoding: bytes.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
                if commandLine.contains("xcallback-queue") && !commandLine.contains("s3cret-pw") { break }
                usleep(25_000)
            }
            return commandLine
        }
        #expect(scrubbed.contains("xcallback-queue") && scrubbed.contains(":xxxxxxxxx@/"), "\(scrubbed)")
        #expect(!scrubbed.contains("s3cret-pw"), "\(scrubbed)")
        follower.send(signal: SIGTERM)
        _ = await follower.awaitExit(timeout: 10)
        #expect(!follower.stderr.contains("s3cret-pw"), "\(follower.stderr)")
    }

    @Test("outcomes --since ID prints only later records; --follow prints new ones as they are recorded; jsonl has the input")
    func outcomesFollow() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture()
        let host = try Self.startHost(fixture, queue)
        // `--since ID` starts after ID's outcome in recording order: the
        // first is recorded alone, before the other two are enqueued (a
        // batch recorded together could hold them in any transaction order).
        let firstIDs = try Self.enqueue(queue, Self.additions(1)).lines
        #expect(host.waitForStdoutLines(1, timeout: 30))
        _ = try Self.enqueue(queue, Self.additions(2, from: 1))
        #expect(host.waitForStdoutLines(3, timeout: 30))
        let follower = try ChildProcess(["outcomes", "--queue", queue, "--follow", "--since", firstIDs[0], "--output", "jsonl"])
        #expect(follower.waitForStdoutLines(2, timeout: 30))
        _ = try Self.enqueue(queue, ["calc://x-callback-url/add?lhs=100&rhs=1"])
        #expect(follower.waitForStdoutLines(3, timeout: 30), "\(follower.stderr)")
        follower.send(signal: SIGTERM)
        // A requested stop, as for `run`: 0, not death by the signal.
        #expect(follower.waitForExit(timeout: 10) == .exited(0), "\(follower.stderr)")
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0))
        let records = follower.stdoutLines
        #expect(records.count == 3)
        #expect(records.last?.contains(#""input":"calc://x-callback-url/add?lhs=100&rhs=1""#) == true, "\(records)")
        #expect(records.last?.contains(#""result":"101""#) == true)
        #expect(!records.contains { $0.contains("lhs=0&") })
    }

    @Test("the outcomes of one recorded batch are numbered in request order, whatever order the host gives them")
    func batchNumberedInRequestOrder() throws {
        // A fresh queue: `hosts` never analyzed, estimated bigger than the
        // batch, so the planner hashes the batch and, before this order was
        // asked for, numbered a batch of one host last first.
        let queue = try TestPostgres.initializedDatabase()
        _ = try Self.enqueue(queue, Self.additions(5))
        // One psql call, one session: the host registers under this login.
        let positions = try TestPostgres.psql(queue, """
            SELECT set_config('test.host', xcallback.register_host('test:1', 60)::text, false);
            SELECT count(*) FROM xcallback.claim(current_setting('test.host')::int8, 10, 60);
            SELECT count(*) FROM xcallback.record_outcomes('{4,2,5,1,3}', '{1,1,1,1,1}',
                array_fill(current_setting('test.host')::int8, ARRAY[5]), array_fill('success'::text, ARRAY[5]),
                array_fill(''::text, ARRAY[5]), array_fill(''::text, ARRAY[5]), 'test:1');
            SELECT string_agg(request_id::text, ',' ORDER BY recorded_by_xact, position) FROM xcallback.outcomes
            """)
        // psql prints each statement's result: the order is the last line.
        #expect(positions.split(separator: "\n").last == "1,2,3,4,5", "\(positions)")
    }

    @Test("a database that cannot be reached at start is a clear error, non-zero, and never shows the password")
    func unreachableDatabase() throws {
        let fixture = try HostFixture()
        let url = "postgresql://someone:s3cret-pw@/nowhere?host=\(fixture.scratch.path)/no-such-folder"
        let run = try xcallback(fixture.runPrefix + ["--queue", url], timeout: 30)
        #expect(run.status == .exited(1))
        #expect(run.stderr.contains("cannot use the queue: cannot connect to PostgreSQL on the Unix socket"), "\(run.stderr)")
        #expect(run.stderr.contains("as user someone, database nowhere"), "\(run.stderr)")
        #expect(!run.stderr.contains("s3cret"))
        let enqueue = try Self.enqueue(url, Self.additions(1))
        #expect(enqueue.status == .exited(1))
        #expect(!enqueue.stderr.contains("s3cret"), "\(enqueue.stderr)")
    }

    @Test("a request that takes down every host running it alone is dead after --max-attempts, with Abandoned; its neighbours are not")
    func deadAfterAttempts() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture()  // in-process: the crash takes the host down
        let lines = ["faulty://x-callback-url/crash?x-error=app://failed"] + Self.additions(100)
        let ids = try Self.enqueue(queue, lines, ["--max-attempts", "2"]).lines
        try #require(ids.count == 101)
        // The first host dies with its whole batch; its requests come back as
        // suspects, which run beside other work, a few at a time: the crash
        // takes down a second host with the suspects beside it. Those run
        // alone from then on: the crash takes down two more hosts.
        for round in 1...4 {
            // The runner's environment: a crashing host dies at once by
            // default (no Swift backtrace, which had taken it 38 s).
            let host = try ChildProcess(fixture.runPrefix + ["--queue", queue, "--lease", "1"])
            let status = host.waitForExit(timeout: 60)
            #expect(status == .signaled(SIGSEGV), "round \(round): \(host.stderr)")
            #expect(host.stderr.contains("xcallback: the host crashed (SIGSEGV) while in-process plug-in 'faulty'"),
                    "round \(round): \(host.stderr)")
            #expect(!host.stderr.contains("processed "), "round \(round): \(host.stderr)")
        }
        // A fifth finds the crash at two strikes: dead. The others run.
        let survivor = try ChildProcess(fixture.runPrefix + ["--queue", queue, "--lease", "1", "--log-level", "info"])
        // The hosts before it may have run some of the hundred alone too.
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(60))
        while try Self.status(queue)["done"]! < 100 && Date() < deadline {
            _ = survivor.waitForStdoutLines(100, timeout: 0.2)
        }
        #expect(survivor.waitForStderr(containing: "ran out of attempts", timeout: 30), "\(survivor.stderr)")
        survivor.send(signal: SIGTERM)
        #expect(survivor.waitForExit(timeout: 30) == .exited(0))
        let dead = try xcallback(["queue", "dead", queue])
        #expect(dead.lines == ["\(ids[0])\t4\tfaulty://x-callback-url/crash?x-error=app://failed"])
        let outcomes = try xcallback(["outcomes", "--queue", queue])
        #expect(outcomes.lines.count == 101)
        #expect(outcomes.lines.filter { $0.hasPrefix("success?result=") }.count == 100)
        #expect(outcomes.lines.contains { $0.hasPrefix("app://failed?errorCode=Abandoned&errorMessage=no%20outcome") }, "\(outcomes.lines)")
        let retried = try xcallback(["queue", "retry", queue, ids[0]])
        #expect(retried.lines == [ids[0]])
        #expect(try Self.status(queue)["ready"] == 1)
        #expect(try Self.status(queue)["dead"] == 0)
    }

    @Test("a host frozen past its lease claims nothing under its old id when it wakes: it registers again, and nothing is dead")
    func frozenHostRegistersAgain() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture(isolation: "process")
        let first = try Self.startHost(fixture, queue)
        #expect(first.waitForStderr(containing: "consuming", timeout: 30))
        kill(first.pid, SIGSTOP)
        let second = try Self.startHost(fixture, queue)
        #expect(second.waitForStderr(containing: "consuming", timeout: 30))
        // The second host finds the first's lease run out and removes it.
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(30))
        while try TestPostgres.psql(queue, "SELECT count(*) FROM xcallback.hosts") != "1" && Date() < deadline { usleep(50_000) }
        kill(second.pid, SIGSTOP)
        _ = try Self.enqueue(queue, (0..<20).map { "faulty://x-callback-url/sleep?ms=500&n=\($0)" }, ["--max-attempts", "1"])
        kill(first.pid, SIGCONT)
        #expect(first.waitForStdoutLines(20, timeout: 60), "\(first.stderr)")
        kill(second.pid, SIGCONT)
        for host in [first, second] { host.send(signal: SIGTERM) }
        #expect(first.waitForExit(timeout: 30) == .exited(0), "first: \(first.stderr)")
        #expect(second.waitForExit(timeout: 30) == .exited(0), "second: \(second.stderr)")
        #expect(first.stderr.contains("it goes on as host"), "\(first.stderr)")
        let status = try Self.status(queue)
        #expect(status["done"] == 20 && status["dead"] == 0, "\(status)")
    }

    @Test("enqueue: ids follow line order, keyed or not; bad keys and invalid UTF-8 are rejected by line number, the rest kept")
    func enqueueOrderAndBadLines() throws {
        let queue = try TestPostgres.initializedDatabase()
        let good = "calc://x-callback-url/add?lhs=1&rhs=2"
        var input: [UInt8] = []
        for line in [good, "kA\t" + good, good, "kB\t" + good] { input += Array((line + "\n").utf8) }
        input += Array("k\u{1}ey\t\(good)\n".utf8)                                   // line 5: control character in the key
        input += Array("calc://x-callback-url/add?lhs=".utf8) + [0xFF] + Array("&rhs=2\n".utf8)  // line 6: invalid UTF-8
        input += Array((String(repeating: "k", count: 2_000) + "\t" + good + "\n").utf8)  // line 7: key too long
        input += Array((good + "\n").utf8)
        let result = try xcallback(["enqueue", "--queue", queue], input: input)
        #expect(result.status == .exited(1))
        let ids = result.lines.compactMap { Int($0) }
        #expect(ids.count == 5)
        #expect(ids == ids.sorted() && Set(ids).count == 5, "\(ids)")
        #expect(result.stderr.contains("stdin:5: idempotency key holds a control character"), "\(result.stderr)")
        #expect(result.stderr.contains("stdin:6: invalid URL: invalid UTF-8"), "\(result.stderr)")
        #expect(result.stderr.contains("stdin:7: idempotency key is longer than"), "\(result.stderr)")
    }

    @Test("four enqueues of the same keyed lines at once: each key is enqueued once, every run prints the same ids")
    func concurrentKeyedEnqueues() throws {
        let queue = try TestPostgres.initializedDatabase()
        let lines = (0..<1_000).map { "key-\($0)\tcalc://x-callback-url/add?lhs=\($0)&rhs=1" }
        let input = Array(lines.map { $0 + "\n" }.joined().utf8)
        let runs = try (0..<4).map { _ in try ChildProcess(["enqueue", "--queue", queue], stdin: .bytes(input)) }
        for run in runs { #expect(run.waitForExit(timeout: 120) == .exited(0), "\(run.stderr)") }
        let outputs = runs.map(\.stdoutLines)
        #expect(outputs.allSatisfy { $0 == outputs[0] })
        #expect(Set(outputs[0]).count == 1_000)
        #expect(try Self.status(queue)["ready"] == 1_000)
    }

    /// Waits until `slow` holds the queue's one request, freezes it
    /// (SIGSTOP) past its lease while another host (returned) runs the
    /// request and writes its record, then lets `slow` go on.
    static func overtake(_ slow: ChildProcess, fixture: HostFixture, queue: String) throws -> ChildProcess {
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(30))
        while try status(queue)["leased"] != 1 && Date() < deadline { usleep(20_000) }
        kill(slow.pid, SIGSTOP)
        let other = try startHost(fixture, queue, ["--lease", "1"])
        #expect(other.waitForStdoutLines(1, timeout: 60), "\(other.stderr)")
        kill(slow.pid, SIGCONT)
        return other
    }

    @Test("a host that lost its lease cannot record: the request runs again elsewhere and has one outcome")
    func fencedHostCannotRecord() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture(isolation: "process")
        _ = try Self.enqueue(queue, ["faulty://x-callback-url/sleep?ms=2500"])
        let slow = try Self.startHost(fixture, queue, ["--lease", "1"])
        #expect(slow.waitForStderr(containing: "consuming", timeout: 30))
        let other = try Self.overtake(slow, fixture: fixture, queue: queue)
        #expect(slow.waitForStderr(containing: "not recorded", timeout: 30), "\(slow.stderr)")
        for host in [slow, other] { host.send(signal: SIGTERM) }
        for host in [slow, other] { #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)") }
        #expect(slow.stdoutLines.isEmpty)
        let outcomes = try xcallback(["outcomes", "--queue", queue, "--output", "jsonl"])
        #expect(outcomes.lines.count == 1)
        #expect(try Self.status(queue)["done"] == 1)
    }

    @Test("connections terminated by the server mid-run: the host reconnects, and no request is lost or recorded twice")
    func reconnects() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture()
        let count = 8_000
        let enqueued = try Self.enqueue(queue, Self.additions(count))
        #expect(enqueued.lines.count == count, "\(enqueued.stderr)")
        let host = try Self.startHost(fixture, queue, ["--batch-size", "64"])
        #expect(host.waitForStdoutLines(1_000, timeout: 60))
        for round in 1...2 {
            let cut = try TestPostgres.psql(queue, """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name LIKE 'xcallback host%' AND datname = current_database()
                """)
            #expect(Int(cut) ?? 0 >= 3, "round \(round): cut \(cut) connections")
            _ = host.waitForStdoutLines(host.stdoutLines.count + 1_000, timeout: 30)
        }
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(120))
        while try Self.status(queue)["done"]! < Double(count) && Date() < deadline {
            _ = host.waitForStdoutLines(count, timeout: 0.5)
        }
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)")
        #expect(host.stderr.contains("reconnecting"), "the test did not cut a connection")
        let outcomes = try xcallback(["outcomes", "--queue", queue], timeout: 60)
        let finalStatus = try Self.status(queue)
        #expect(outcomes.lines.count == count, "status \(finalStatus); outcomes stderr: \(outcomes.stderr)")
        #expect(Set(outcomes.lines).count == count)
        #expect(host.stdoutLines.count <= count)
    }

    @Test("a plug-in reads the queue's request id and the attempt: 2 once the host that first claimed it died",
          arguments: ["none", "process"])
    func idAndAttemptReachThePlugin(isolation: String) throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build("inspect", source: RequestIntrospectionTests.source(minor: 2), into: fixture.plugins)
        let ids = try Self.enqueue(queue, ["inspect://x-callback-url/plain", "inspect://x-callback-url/plain"]).lines
        try #require(ids.count == 2)
        // The second was claimed once by a host whose lease has since run out.
        try TestPostgres.psql(queue, """
            INSERT INTO xcallback.hosts (id, name, expires_at) VALUES (12345, 'gone:1', now() - interval '1 minute');
            UPDATE xcallback.requests SET leased_by = 12345, attempt = 1 WHERE id = \(ids[1])
            """)
        let host = try Self.startHost(fixture, queue, ["--lease", "1", "--output", "jsonl"])
        #expect(host.waitForStdoutLines(2, timeout: 60), "\(host.stderr)")
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0))
        let records = try host.stdoutLines.map { try Record(jsonLine: $0) }
        let byID = Dictionary(records.map { ($0.params["id"] ?? "", $0.params["attempt"] ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(byID == [ids[0]: "1", ids[1]: "2"], "\(records)")
    }

    @Test("--open opens each recorded callback on the host that recorded it, after the commit; records without one are written")
    func openAfterCommit() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture()
        let log = fixture.scratch.file("opened.log")
        let command = fixture.scratch.file("opener")
        // The opener checks that the outcome is already recorded when it runs.
        try installScript(at: command, """
            #!/bin/sh
            n=$(psql -X -A -t '\(queue)' -c "SELECT count(*) FROM xcallback.outcomes WHERE callback IS NOT NULL")
            printf '%s %s\\n' "$n" "$1" >> '\(log)'
            """)
        _ = try Self.enqueue(queue, ["calc://x-callback-url/add?lhs=1&rhs=2&x-success=app://done",
                                     "calc://x-callback-url/add?lhs=5&rhs=5"])
        let host = try Self.startHost(fixture, queue, ["--open", command])
        #expect(host.waitForStdoutLines(1, timeout: 30))
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(30))
        while (try? String(contentsOfFile: log, encoding: .utf8))?.isEmpty ?? true, Date() < deadline { usleep(20_000) }
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)")
        #expect(host.stdoutLines == ["success?result=10"])
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "1 app://done?result=3\n")
    }

    @Test("an idle host asks the database about once a second")
    func idleHostIsQuiet() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture()
        let host = try fixture.start(["--queue", queue, "--log-level", "info"], stdin: .null)
        #expect(host.waitForStderr(containing: "consuming", timeout: 30))
        func transactions() throws -> Int {
            Int(try TestPostgres.psql(queue, """
                SELECT pg_stat_clear_snapshot(); SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()
                """).split(separator: "\n").last!)!
        }
        // The quantity measured is a rate over time: the waits are the
        // measurement. Two windows, and the quieter one counts: the
        // database's own work (autovacuum on the new tables) lands in one.
        func rate() throws -> Double {
            let before = try transactions()
            let start = Date()
            usleep(3_000_000)
            let after = try transactions()
            // Less the psql that reads the count (its transactions count too).
            return Double(after - before - 2) / Date().timeIntervalSince(start)
        }
        let quieter = min(try rate(), try rate())
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0))
        #expect(quieter < 2.5, "an idle host made \(quieter) transactions a second")
    }
}

/// `xcallback` and `xcallback-queue` share their command line
/// (XCallbackCLI); the database client stays out of `xcallback`, which
/// every stdin run and every worker starts (docs/performance.md).
@Suite("xcallback-queue's database client", .ownThreads,
       .enabled(if: TestPostgres.queueBuilt || ProcessInfo.processInfo.environment["CI"] != nil,
                Comment(rawValue: TestPostgres.queueNotBuilt)))
struct QueueBinaryTests {
    @Test("PostgresNIO is linked into xcallback-queue and not into xcallback")
    func leanBinary() throws {
        func links(_ binary: String, _ module: String) throws -> Bool {
            guard let data = FileManager.default.contents(atPath: binary) else { throw HarnessError("cannot read \(binary)") }
            return data.range(of: Data(module.utf8)) != nil
        }
        #expect(try links(Products.directory + "/xcallback-queue", "PostgresNIO"))
        #expect(try !links(Products.xcallback, "PostgresNIO"))
    }
}
