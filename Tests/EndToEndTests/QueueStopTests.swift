import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/queue.md, "What happens when": a queue host's stop is bounded
/// whatever the database does. These stop their own PostgreSQL server, so
/// each runs one of its own (`.ci/postgres`), not the suite's shared one.
@Suite("Queue: a bounded stop", .ownThreads, .requires(.postgres),
       .scaledTimeLimit(minutes: 3))
struct QueueStopTests {
    /// A PostgreSQL server of the test's own, in a temporary folder.
    final class PrivateServer: Sendable {
        let folder: String
        let url: String

        init() throws {
            (folder, url) = try TestPostgres.startCluster(named: "xcb-pg-stop")
        }

        func stop() { TestPostgres.stopCluster(in: folder) }

        func resume() throws { try TestPostgres.resumeCluster(in: folder) }

        deinit {
            stop()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    @Test("requests in flight, the database stopped, then SIGTERM: exit 0 within the grace period plus --database-stop-timeout, saying once what it gave up")
    func databaseDownAtStop() async throws {
        let server = try await offCooperativePool { try PrivateServer() }
        let queue = server.url
        let initialised = try await offCooperativePool { try xcallback(["queue", "init", queue]) }
        try #require(initialised.status == .exited(0), "\(initialised.stderr)")
        let sleeps = (0..<50).map { _ in "faulty://x-callback-url/sleep?ms=1500" }
        let enqueued = try await offCooperativePool { try QueueTests.enqueue(queue, sleeps) }
        try #require(enqueued.status == .exited(0), "\(enqueued.stderr)")

        let fixture = try HostFixture(["Faulty"])
        let (grace, stopTimeout) = (2.0, 3.0)
        let host = try QueueTests.startHost(fixture, queue, ["--grace-period", "\(grace)",
                                                            "--database-stop-timeout", "\(stopTimeout)"])
        defer { host.send(signal: SIGKILL) }
        // Claimed and running: none ready any more.
        let claimed = await offCooperativePool { () -> Bool in
            for _ in 0..<200 {
                if let status = try? QueueTests.status(queue), status["ready"] == 0, (status["leased"] ?? 0) > 0 { return true }
                usleep(50_000)
            }
            return false
        }
        try #require(claimed, "the host never claimed the requests: \(host.stderr)")

        await offCooperativePool { server.stop() }
        try await Task.sleep(for: .milliseconds(500))
        let (status, seconds) = await host.stopAndTimeExit(signal: SIGTERM, timeout: TestTiming.scaled(60))
        #expect(status == .exited(0), "stderr: \(host.stderr)")
        let bound = grace + stopTimeout + TestTiming.scaled(5)
        #expect((seconds ?? .infinity) < bound, "exited after \(seconds.map { "\($0) s" } ?? "more than 60 s"); the bound is \(bound) s. stderr: \(host.stderr)")
        let givenUp = host.stderr.components(separatedBy: "stopped without the database").count - 1
        #expect(givenUp == 1, "stderr: \(host.stderr)")
        #expect(host.stderr.contains("not recorded") || host.stderr.contains("not unregistered"), "stderr: \(host.stderr)")
    }
}
