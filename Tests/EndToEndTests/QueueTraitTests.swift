import Foundation
import Testing

/// A build without the trait `Queue` (the README's `swift build`): each of
/// the queue's commands, which `xcallback` hands to `xcallback-queue`,
/// reaches its stub, which says how to build them instead.
@Suite("Without the Queue trait", .ownThreads, .enabled(if: !TestPostgres.queueBuilt, "this build has the queue"))
struct QueueTraitTests {
    @Test("queue, enqueue, outcomes and run --queue say to build with --traits Queue, and exit 2")
    func stubSaysHow() throws {
        for arguments in [["queue", "init", "postgresql:///jobs"], ["enqueue", "--queue", "postgresql:///jobs"],
                          ["outcomes", "--queue", "postgresql:///jobs"], ["run", "--queue", "postgresql:///jobs"]] {
            let result = try xcallback(arguments)
            #expect(result.status == .exited(2), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(arguments): \(result.stdout)")
            #expect(result.stderr == "xcallback: this build has no durable queue; "
                        + "build it with `swift build --traits Queue` (docs/queue.md)\n", "\(arguments)")
        }
    }
}
