import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every (request id, attempt) runs at most once while the server keeps
/// ending a host's connections, or fails commits after their answer; and a
/// host works through a role that may write nothing it does not need.
@Suite("Durable queue: fenced re-runs and least privilege", .ownThreads,
       .requires(.postgres),
       .serialized, .scaledTimeLimit(minutes: 4))
struct QueueFenceTests {
    /// A plug-in that appends "ID ATTEMPT" to the file its request names,
    /// one `write` per execution (O_APPEND: lines never interleave).
    static let counterSource = """
        #include <fcntl.h>
        #include <inttypes.h>
        #include <stdio.h>
        #include <unistd.h>
        #include "xcallback.h"

        XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void) {
            static const xcallback_descriptor descriptor = {
                XCALLBACK_ABI_MAGIC, XCALLBACK_ABI_MAJOR, 2, (uint32_t)sizeof(xcallback_descriptor), 0u,
                "count", "1.0.0", "Counts its executions in a file" };
            return &descriptor;
        }

        static const xcallback_host_api *host;

        static void count(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)unused;
            const char *file = host->request_parameter(request, "file", NULL);
            int fd = file ? open(file, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
            if (fd < 0) {
                host->reply_error(reply, "NoFile", "cannot open the count file", NULL);
                return;
            }
            char line[64];
            int length = snprintf(line, sizeof line, "%" PRIu64 " %" PRIu32 "\\n",
                                  host->request_id(request), host->request_attempt(request));
            ssize_t written = write(fd, line, (size_t)length);
            close(fd);
            if (written != length) {
                host->reply_error(reply, "ShortWrite", "the count file took part of a line", NULL);
                return;
            }
            host->reply_success(reply, NULL, 0);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            return api->register_action(plugin, "count", "run", count, NULL);
        }
        """

    /// Ends every connection of the queue's hosts; returns how many.
    @discardableResult
    static func terminateHostConnections(_ queue: String) throws -> Int {
        Int(try TestPostgres.psql(queue, """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE application_name LIKE 'xcallback host%' AND datname = current_database()
            """)) ?? 0
    }

    @Test("connections terminated every 0.5 s: each (request id, attempt) runs at most once, and each request has one outcome")
    func terminatedConnectionsRunNothingTwiceUnderOneAttempt() throws {
        let count = ProcessInfo.processInfo.environment["XCALLBACK_QUEUE_CUT_REQUESTS"].flatMap(Int.init) ?? 20_000
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture([], isolation: "none")
        try TestPlugin.build("count", source: Self.counterSource, into: fixture.plugins)
        let file = fixture.plugins + "/executions"
        let encoded = file.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let lines = (0..<count).map { "count://x-callback-url/run?file=\(encoded)&n=\($0)" }
        let enqueued = try xcallback(["enqueue", "--queue", queue], lines: lines, timeout: 120)
        try #require(enqueued.lines.count == count, "\(enqueued.stderr)")

        let host = try fixture.start(["--queue", queue, "--lease", "15", "--log-level", "info"], stdin: .null)
        #expect(host.waitForStdoutLines(1, timeout: 60), "\(host.stderr)")
        // The server ends the host's connections every half second until every
        // request has an outcome (written to stdout after its commit).
        var cuts = 0
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(180))
        while host.stdoutLines.count < count && Date() < deadline {
            if try Self.terminateHostConnections(queue) > 0 { cuts += 1 }
            _ = host.waitForStdoutLines(count, timeout: 0.5)
        }
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 60) == .exited(0), "\(host.stderr)")
        #expect(cuts >= 4, "the test cut the connections only \(cuts) time(s)")

        let executions = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        var runs: [Substring: Int] = [:]
        for execution in executions { runs[execution, default: 0] += 1 }
        let twice = runs.filter { $0.value > 1 }
        let requests = Set(executions.map { $0.split(separator: " ")[0] })
        print("QueueFenceTests: \(count) requests, \(executions.count) executions, \(cuts) cuts, "
              + "\(executions.count - requests.count) re-runs, \(twice.count) (id, attempt) run more than once")
        #expect(twice.isEmpty, "run more than once under one attempt: \(twice.prefix(10))")
        #expect(requests.count == count)

        let outcomes = try xcallback(["outcomes", "--queue", queue, "--output", "jsonl"], timeout: 120)
        #expect(outcomes.lines.count == count, "\(outcomes.stderr)")
        #expect(Set(outcomes.lines).count == count)
        let status = try QueueTests.status(queue)
        #expect(status["done"] == Double(count) && status["ready"] == 0 && status["leased"] == 0, "\(status)")
        // One host: no lease of its ever passed to another.
        #expect(!host.stderr.contains("another host"), "\(host.stderr)")
    }

    @Test("commits that fail after the statement answered: no (request id, attempt) runs twice, no outcome is lost or doubled")
    func commitsFailingAfterTheAnswerRunNothingTwice() throws {
        // What a connection ended between a statement's answer and its commit
        // does (the server commits at the Sync after it), made certain: a
        // deferred trigger fails the commit of one claimed or retired row in
        // 499, after the client has read the statement's rows, 6 times (a
        // batch of a thousand would otherwise fail every time).
        let count = 2_000
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture([], isolation: "none")
        try TestPlugin.build("count", source: Self.counterSource, into: fixture.plugins)
        let file = fixture.plugins + "/executions"
        let encoded = file.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let enqueued = try xcallback(["enqueue", "--queue", queue],
                                     lines: (0..<count).map { "count://x-callback-url/run?file=\(encoded)&n=\($0)" }, timeout: 120)
        try #require(enqueued.lines.count == count, "\(enqueued.stderr)")
        try TestPostgres.psql(queue, """
            CREATE SEQUENCE public.commit_failures;
            CREATE FUNCTION public.fail_some_commits() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE n bigint := nextval('public.commit_failures');
            BEGIN
                IF n % 499 = 0 AND n <= 499 * 6 THEN
                    RAISE EXCEPTION 'injected: this commit fails after the statement answered';
                END IF;
                RETURN NULL;
            END $$;
            CREATE CONSTRAINT TRIGGER fail_claims AFTER UPDATE ON xcallback.requests DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.leased_by IS NOT NULL) EXECUTE FUNCTION public.fail_some_commits();
            CREATE CONSTRAINT TRIGGER fail_records AFTER DELETE ON xcallback.requests DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION public.fail_some_commits()
            """)
        let host = try fixture.start(["--queue", queue, "--lease", "15", "--log-level", "info", "--output", "jsonl"],
                                     stdin: .null)
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(120))
        while try QueueTests.status(queue)["done"]! < Double(count) && Date() < deadline {
            _ = host.waitForStdoutLines(count, timeout: 0.5)
        }
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 60) == .exited(0), "\(host.stderr)")
        let failures = Int(try TestPostgres.psql(queue, "SELECT least(6, last_value / 499) FROM public.commit_failures")) ?? 0
        #expect(failures >= 3, "only \(failures) commit(s) failed")

        let executions = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        var runs: [Substring: Int] = [:]
        for execution in executions { runs[execution, default: 0] += 1 }
        let twice = runs.filter { $0.value > 1 }
        print("QueueFenceTests: \(count) requests, \(executions.count) executions, about \(failures) failed commits, "
              + "\(twice.count) (id, attempt) run more than once")
        #expect(twice.isEmpty, "run more than once under one attempt: \(twice.prefix(10))")
        let outcomes = try xcallback(["outcomes", "--queue", queue, "--output", "jsonl"], timeout: 120)
        #expect(outcomes.lines.count == count && Set(outcomes.lines).count == count,
                "\(outcomes.stderr); host: \(host.stderr.suffix(3_000))")
        #expect(Set(host.stdoutLines).count == host.stdoutLines.count)
        #expect(!host.stderr.contains("another host"), "\(host.stderr.suffix(2_000))")
    }

    @Test("the host role of --print-grants is refused every write it does not need, and still claims, heartbeats, records and re-runs")
    func leastPrivilege() throws {
        let owner = try TestPostgres.initializedDatabase()
        let grants = try xcallback(["queue", "init", owner, "--print-grants"])
        try #require(grants.status == .exited(0), "\(grants.stderr)")
        try TestPostgres.psql(owner, grants.stdout)
        // Logins of each group role of this queue (cluster-wide names, so this process's own).
        let suffix = "\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        var url: [String: String] = [:]
        let database = QueueRoleTests.databaseName(owner)
        for (login, group) in [("h", "host"), ("e", "enqueue"), ("r", "reader")] {
            let name = "xcb_\(login)_\(suffix)"
            try TestPostgres.psql(owner, "CREATE ROLE \(name) LOGIN IN ROLE \"\(database).xcallback.\(group)\"")
            url[login] = owner.replacingOccurrences(of: "postgresql://xcallback@", with: "postgresql://\(name)@")
        }
        let (hostURL, enqueueURL, readerURL) = (url["h"]!, url["e"]!, url["r"]!)
        try #require(hostURL != owner, "the test's URL has no user to replace: \(owner)")

        let ids = try QueueTests.enqueue(enqueueURL, ["calc://x-callback-url/add?lhs=1&rhs=1",
                                                      "calc://x-callback-url/add?lhs=2&rhs=1",
                                                      "calc://x-callback-url/add?lhs=3&rhs=1"])
        try #require(ids.status == .exited(0) && ids.lines.count == 3, "\(ids.stderr)")
        // The third was claimed once by a host whose lease has since run out:
        // it runs again (attempt 2), through the host role.
        try TestPostgres.psql(owner, """
            INSERT INTO xcallback.hosts (id, name, expires_at) VALUES (12345, 'gone:1', now() - interval '1 minute');
            UPDATE xcallback.requests SET leased_by = 12345, attempt = 1 WHERE id = \(ids.lines[2]);
            INSERT INTO xcallback.outcomes (request_id, line, outcome, params, attempts, host, enqueued_at, recorded_at)
            VALUES (999999, 'old://', 'success', '', 1, 'old:1', now(), now() - interval '30 days')
            """)

        // Each write a host does not need, as the host role: refused.
        let forbidden = [
            "UPDATE xcallback.schema_migrations SET version = 99",
            "INSERT INTO xcallback.schema_migrations (version) VALUES (99)",
            "INSERT INTO xcallback.outcomes (request_id, line, outcome, params, attempts, host, enqueued_at) VALUES (\(ids.lines[0]), 'forged://', 'success', '', 1, 'x', now())",
            "UPDATE xcallback.outcomes SET outcome = 'error'",
            "DELETE FROM xcallback.outcomes",
            "UPDATE xcallback.requests SET line = 'forged://x-callback-url/x'",
            "DELETE FROM xcallback.requests",
            "INSERT INTO xcallback.requests (id, line, max_attempts) VALUES (424242, 'forged://', 1)",
            "UPDATE xcallback.requests SET leased_by = 42",
            "UPDATE xcallback.requests SET attempt = 0, strikes = 0",
            "INSERT INTO xcallback.hosts (id, name, expires_at) VALUES (42, 'forged:1', now())",
            "UPDATE xcallback.hosts SET expires_at = now()",
            "DELETE FROM xcallback.hosts",
            "DELETE FROM xcallback.request_keys",
        ]
        for statement in forbidden {
            #expect(throws: HarnessError.self, "the host role may: \(statement)") { try TestPostgres.psql(hostURL, statement) }
        }
        // The readers and enqueuers write nothing else either.
        #expect(throws: HarnessError.self) { try TestPostgres.psql(readerURL, "UPDATE xcallback.requests SET attempt = 0") }
        #expect(throws: HarnessError.self) { try TestPostgres.psql(enqueueURL, "UPDATE xcallback.requests SET line = ''") }
        #expect(throws: HarnessError.self) { try TestPostgres.psql(enqueueURL, "SELECT count(*) FROM xcallback.outcomes") }

        // The host, as the host role: claims, heartbeats (a 1 s lease, three
        // beats a second), rescues once every three beats, so the third
        // request, re-run, is recorded only after heartbeats; it does not prune.
        let fixture = try HostFixture()
        let host = try QueueTests.startHost(fixture, hostURL, ["--lease", "1", "--output", "jsonl"])
        #expect(host.waitForStdoutLines(3, timeout: 60), "\(host.stderr)")
        #expect(host.waitForStderr(containing: "does not prune", timeout: 30), "\(host.stderr)")
        _ = try QueueTests.enqueue(enqueueURL, ["calc://x-callback-url/add?lhs=4&rhs=1"])
        #expect(host.waitForStdoutLines(4, timeout: 60), "\(host.stderr)")
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)")
        #expect(!host.stderr.contains("this host's lease ran out"), "\(host.stderr)")
        #expect(!host.stderr.contains("permission denied") || host.stderr.contains("does not prune"), "\(host.stderr)")
        let records = try host.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(Set(records.map(\.input)).count == 4)

        // The reader reads outcomes and status; the old outcome is still there.
        let outcomes = try xcallback(["outcomes", "--queue", readerURL, "--output", "jsonl"])
        #expect(outcomes.status == .exited(0) && outcomes.lines.count == 5, "\(outcomes.stderr)")
        let status = try QueueTests.status(readerURL)
        #expect(status["done"] == 5 && status["ready"] == 0 && status["leased"] == 0, "\(status)")
        #expect(try TestPostgres.psql(owner, "SELECT attempts FROM xcallback.outcomes WHERE request_id = \(ids.lines[2])") == "2")
        #expect(try TestPostgres.psql(owner, "SELECT max(version) FROM xcallback.schema_migrations") == "4")
        // The owner still does everything, pruning included.
        let pruned = try xcallback(["queue", "prune", owner, "--retention", "86400"])
        #expect(pruned.status == .exited(0), "\(pruned.stderr)")
        #expect(try TestPostgres.psql(owner, "SELECT count(*) FROM xcallback.outcomes") == "4")
    }
}
