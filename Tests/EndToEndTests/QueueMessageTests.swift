import Foundation
import Testing

/// What the queue's commands say when something is wrong (issue 43): a
/// suggestion that can be run as printed, and errors in our own words.
@Suite("Durable queue: messages that can be acted on as printed", .ownThreads,
       .requires(.postgres), .serialized, .scaledTimeLimit(minutes: 2))
struct QueueMessageTests {
    @Test("a suggestion to run queue init names a URL that parses: running it as printed creates the queue")
    func suggestionParses() throws {
        let queue = try TestPostgres.database() + "&schema=later"
        let status = try xcallback(["queue", "status", queue])
        #expect(status.status == .exited(1))
        let suggestion = try #require(status.stderr.components(separatedBy: "xcallback queue init '").dropFirst().first?
            .prefix { $0 != "'" }, "\(status.stderr)")
        let initialized = try xcallback(["queue", "init", String(suggestion)])
        #expect(initialized.status == .exited(0), "\(suggestion): \(initialized.stderr)")
        #expect(try QueueTests.status(queue)["ready"] == 0)
    }

    @Test("an unknown host name is said in our words, with the C library's reason, not SwiftNIO's")
    func unknownHost() throws {
        let status = try xcallback(["queue", "status", "postgresql://ana@nope.invalid/jobs"], timeout: 60)
        #expect(status.status == .exited(1))
        #expect(status.stderr.contains("cannot connect to PostgreSQL on host nope.invalid, port 5432, as user ana, database jobs: the host name nope.invalid cannot be translated to an address"),
                "\(status.stderr)")
        #expect(!status.stderr.contains("SocketAddressError") && !status.stderr.contains("NIO"), "\(status.stderr)")
    }
}
