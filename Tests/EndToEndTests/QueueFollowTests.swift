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
}
