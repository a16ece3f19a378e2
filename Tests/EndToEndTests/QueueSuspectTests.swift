import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A dead host does not stall the fleet (issue 43, item 5): the requests it
/// held come back as suspects and run beside fresh work, a few at a time
/// on each host, where every host used to stop claiming and run them one by
/// one (1,000 fresh requests waited 81 s behind 200 one-second suspects).
@Suite("Durable queue: suspects beside fresh work", .ownThreads, .requires(.postgres),
       .serialized, .scaledTimeLimit(minutes: 4))
struct QueueSuspectTests {
    /// The longest any of the outcomes whose line is `LIKE pattern` waited
    /// from enqueue to record, in seconds, once all `count` are recorded.
    static func longestWait(_ queue: String, like pattern: String, count: Int) throws -> Double? {
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(120))
        let sql = """
            SELECT count(*) || ' ' || coalesce(extract(epoch FROM max(recorded_at - enqueued_at)), 0)
            FROM xcallback.outcomes WHERE line LIKE '\(pattern)'
            """
        while Date() < deadline {
            let parts = try TestPostgres.psql(queue, sql).split(separator: " ")
            if parts.count == 2, Int(parts[0]) == count { return Double(parts[1]) }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }

    @Test("a host SIGKILLed holding 200 one-second requests, two healthy hosts: 1,000 fresh requests wait under 2 s longer than without it")
    func deadHostDoesNotStallTheFleet() throws {
        let queue = try TestPostgres.initializedDatabase()
        let fixture = try HostFixture()
        func additions(_ marker: Int) -> [String] {
            (0..<1_000).map { "calc://x-callback-url/add?lhs=\($0)&rhs=\(marker)" }
        }
        func healthyHosts() throws -> [ChildProcess] {
            let hosts = try (0..<2).map { _ in
                try fixture.start(["--queue", queue, "--lease", "2", "--log-level", "info"], stdin: .null)
            }
            for host in hosts { #expect(host.waitForStderr(containing: "consuming", timeout: 30), "\(host.stderr)") }
            return hosts
        }
        func stop(_ hosts: [ChildProcess]) {
            for host in hosts {
                host.send(signal: SIGTERM)
                #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)")
            }
        }
        // The baseline: what 1,000 fresh requests wait on this machine now.
        let first = try healthyHosts()
        defer { for host in first { host.send(signal: SIGKILL) } }
        _ = try QueueTests.enqueue(queue, additions(1))
        let baseline = try #require(try Self.longestWait(queue, like: "calc:%rhs=1", count: 1_000))
        stop(first)

        // A host claims 200 one-second requests and is killed holding them.
        let victim = try fixture.start(["--queue", queue, "--lease", "2"], stdin: .null)
        defer { victim.send(signal: SIGKILL) }
        _ = try QueueTests.enqueue(queue, (0..<200).map { "faulty://x-callback-url/sleep?ms=1000&n=\($0)" })
        let leased = "SELECT count(*) FROM xcallback.requests WHERE leased_by IS NOT NULL"
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(30))
        while try TestPostgres.psql(queue, leased) != "200" && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        victim.send(signal: SIGKILL)
        _ = victim.waitForExit(timeout: 10)
        let held = Int(try TestPostgres.psql(queue, leased)) ?? 0
        #expect(held >= 150, "the victim held only \(held) of the 200 when it died")

        // Two healthy hosts: once its lease has run out, one of them returns
        // its requests as suspects.
        let hosts = try healthyHosts()
        defer { for host in hosts { host.send(signal: SIGKILL) } }
        let suspects = "SELECT count(*) FROM xcallback.requests WHERE suspect"
        let returned = Date(timeIntervalSinceNow: TestTiming.scaled(30))
        while try TestPostgres.psql(queue, suspects) == "0" && Date() < returned { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try TestPostgres.psql(queue, suspects) != "0", "no suspects came back")

        _ = try QueueTests.enqueue(queue, additions(2))
        let beside = try #require(try Self.longestWait(queue, like: "calc:%rhs=2", count: 1_000))
        print("QueueSuspectTests: \(held) suspects; 1,000 fresh requests waited at most \(baseline) s alone, \(beside) s beside them")
        #expect(beside - baseline < TestTiming.scaled(2), "fresh requests waited \(beside) s beside the suspects, \(baseline) s without")

        // Every suspect runs too, once.
        #expect(try Self.longestWait(queue, like: "faulty:%", count: 200) != nil)
        #expect(try TestPostgres.psql(queue, "SELECT count(*) FROM xcallback.requests") == "0")
        stop(hosts)
    }
}
