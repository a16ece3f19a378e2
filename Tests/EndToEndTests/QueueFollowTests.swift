import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `outcomes --follow` as a pipeline's first command (issue 43, item 4).
@Suite("Durable queue: outcomes --follow in a pipeline", .ownThreads,
       .requires(.postgres), .serialized, .scaledTimeLimit(minutes: 2))
struct QueueFollowTests {
    @Test("outcomes --follow | head -1: it exits 0, quietly, once its reader has left, though it has nothing more to write")
    func followerLeavesWithItsReader() throws {
        let queue = try TestPostgres.initializedDatabase()
        try TestPostgres.psql(queue, """
            INSERT INTO xcallback.outcomes (request_id, line, outcome, params, attempts, host, enqueued_at)
            VALUES (1, 'calc://x-callback-url/add?lhs=1&rhs=1', 'success', 'result=2', 1, 'test:1', now())
            """)
        // The harness closes its end of the pipe after one line, as head does.
        let follower = try ChildProcess(["outcomes", "--queue", queue, "--follow"], closeStdoutAfterLines: 1)
        defer { follower.send(signal: SIGKILL) }
        #expect(follower.waitForExit(timeout: 10) == .exited(0), "\(follower.stderr)")
        #expect(follower.stderr.isEmpty, "\(follower.stderr)")
    }

    @Test("outcomes --follow --wait-for-database reads on when its connection is ended mid-read: every outcome printed once, none skipped")
    func followerSurvivesAnEndedConnection() throws {
        let queue = try TestPostgres.initializedDatabase()
        func record(_ range: ClosedRange<Int>) throws {
            try TestPostgres.psql(queue, """
                INSERT INTO xcallback.outcomes (request_id, line, outcome, params, attempts, host, enqueued_at)
                SELECT g, 'calc://x-callback-url/add?lhs=' || g || '&rhs=1', 'success', 'result=' || (g + 1), 1, 'test:1', now()
                FROM generate_series(\(range.lowerBound), \(range.upperBound)) g
                """)
        }
        try record(1...1_000)
        let follower = try ChildProcess(["outcomes", "--queue", queue, "--follow", "--output", "jsonl",
                                         "--wait-for-database", "60"])
        defer { follower.send(signal: SIGKILL) }
        #expect(follower.waitForStdoutLines(1_000, timeout: 60), "\(follower.stderr)")
        // Its next read waits on a lock; its connection is ended then, with
        // the statement in flight, as a restart or an operator would.
        let locker = try ChildProcess(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", queue, "-c",
                                       "BEGIN; LOCK TABLE xcallback.outcomes IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;"],
                                      executable: "/usr/bin/env")
        let waiting = """
            SELECT pid FROM pg_stat_activity
            WHERE application_name = 'xcallback client' AND datname = current_database() AND wait_event_type = 'Lock'
            """
        var pid = ""
        let deadline = Date().addingTimeInterval(10)
        while pid.isEmpty && Date() < deadline { pid = try TestPostgres.psql(queue, waiting) }
        try #require(!pid.isEmpty, "the follower never waited on the lock")
        try TestPostgres.psql(queue, "SELECT pg_terminate_backend(\(pid))")
        #expect(follower.waitForStderr(containing: "reconnecting for up to 60 s", timeout: 30), "\(follower.stderr)")
        #expect(locker.waitForExit(timeout: 30) == .exited(0), "\(locker.stderr)")
        try record(1_001...2_000)
        #expect(follower.waitForStdoutLines(2_000, timeout: 60), "\(follower.stderr)")
        follower.send(signal: SIGTERM)
        #expect(follower.waitForExit(timeout: 30) == .exited(0), "\(follower.stderr)")
        let inputs = try follower.stdoutLines.map { try Record(jsonLine: $0).input }
        #expect(inputs.count == 2_000 && Set(inputs).count == 2_000, "\(inputs.count) lines, \(Set(inputs).count) distinct")
    }

    /// A psql session the test drives line by line (`BEGIN; …`, then
    /// `COMMIT`), on `url`; `await` returns once what was sent before it ran.
    final class Session {
        let psql: ChildProcess
        private var marks = 0
        init(_ url: String) throws {
            psql = try ChildProcess(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url],
                                    executable: "/usr/bin/env", stdin: .pipe)
        }
        func run(_ sql: String) -> Bool {
            marks += 1
            return psql.write(sql + "\nSELECT 'mark \(marks)';\n") && psql.waitForStdout(timeout: 30) { $0.contains("mark \(marks)") }
        }
        func end() -> ExitStatus {
            psql.closeInput()
            return psql.waitForExit(timeout: 30)
        }
    }

    static func insertOutcome(_ id: Int) -> String {
        """
        INSERT INTO xcallback.outcomes (request_id, line, outcome, params, attempts, host, enqueued_at)
        VALUES (\(id), 'calc://x-callback-url/add?lhs=\(id)&rhs=1', 'success', 'result=\(id + 1)', 1, 'test:1', now());
        """
    }

    /// The request ids of a follower's jsonl records, in order.
    static func ids(_ follower: ChildProcess) throws -> [Int] {
        try follower.stdoutLines.map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard let id = object?["id"] as? Int else { throw HarnessError("no id in \(line)") }
            return id
        }
    }

    @Test("outcomes --follow --after the last id a follower printed takes over from it: no outcome skipped, none twice, though commits land out of order")
    func takeOverAfterTheLastID() throws {
        let queue = try TestPostgres.initializedDatabase()
        try TestPostgres.psql(queue, (1...3).map(Self.insertOutcome).joined())
        // Outcome 4's transaction starts first and stays open; 5's commits
        // meanwhile: 5 is numbered after 4 but visible before it.
        let open = try Session(queue)
        defer { _ = open.end() }
        try #require(open.run("BEGIN; \(Self.insertOutcome(4))"))
        try TestPostgres.psql(queue, Self.insertOutcome(5))
        let first = try ChildProcess(["outcomes", "--queue", queue, "--follow", "--output", "jsonl"])
        defer { first.send(signal: SIGKILL) }
        #expect(first.waitForStdoutLines(3, timeout: 30), "\(first.stderr)")
        first.send(signal: SIGTERM)
        #expect(first.waitForExit(timeout: 30) == .exited(0), "\(first.stderr)")
        // Not 5 before 4 has ended: after 5, a follower could not tell 4 apart.
        let printed = try Self.ids(first)
        #expect(printed == [1, 2, 3], "\(printed)")

        try #require(open.run("COMMIT;"))
        let second = try ChildProcess(["outcomes", "--queue", queue, "--follow", "--output", "jsonl",
                                       "--after", String(printed.last ?? 0)])
        defer { second.send(signal: SIGKILL) }
        #expect(second.waitForStdoutLines(2, timeout: 30), "\(second.stderr)")
        try TestPostgres.psql(queue, Self.insertOutcome(6))
        #expect(second.waitForStdoutLines(3, timeout: 30), "\(second.stderr)")
        second.send(signal: SIGTERM)
        #expect(second.waitForExit(timeout: 30) == .exited(0), "\(second.stderr)")
        #expect(try printed + Self.ids(second) == [1, 2, 3, 4, 5, 6])
    }

    @Test("a transaction left open in another database of the server does not hold a follower back")
    func otherDatabaseDoesNotHoldBack() throws {
        let queue = try TestPostgres.initializedDatabase()
        // A transaction with an id, open in the server's `postgres` database.
        let elsewhere = try Session(try TestPostgres.serverURL())
        defer { _ = elsewhere.end() }
        try #require(elsewhere.run("BEGIN; SELECT pg_current_xact_id() IS NOT NULL;"))
        let follower = try ChildProcess(["outcomes", "--queue", queue, "--follow", "--output", "jsonl"])
        defer { follower.send(signal: SIGKILL) }
        try TestPostgres.psql(queue, Self.insertOutcome(1))
        #expect(follower.waitForStdoutLines(1, timeout: 30), "\(follower.stderr)")
        try #require(elsewhere.run("COMMIT;"))
        follower.send(signal: SIGTERM)
        #expect(follower.waitForExit(timeout: 30) == .exited(0), "\(follower.stderr)")
        #expect(try Self.ids(follower) == [1])
    }
}
