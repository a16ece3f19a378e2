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
}
