import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Three hosts consume one queue while a driver SIGKILLs a random host every
/// few seconds and starts it again, and terminates every host's database
/// connections twice; in the second run it also stops PostgreSQL itself as
/// a crash would (`pg_ctl -m immediate`) and starts it again. At the end
/// every request has exactly one recorded outcome: none lost, none
/// recorded twice.
///
/// It runs alone, from `.ci/stress` (and so from `.ci/run`), with 50,000
/// requests: `XCALLBACK_QUEUE_CHAOS_REQUESTS=50000 swift test --filter
/// QueueChaosTests`. In a plain `swift test` it is skipped: beside the other
/// suites it held a test thread for over a minute, and Swift Testing's time
/// limits start when a test is scheduled. XCALLBACK_QUEUE_CHAOS_SEED replays
/// a run's kill plan.
@Suite("Durable queue under chaos", .ownThreads,
       .enabled(if: ProcessInfo.processInfo.environment["XCALLBACK_QUEUE_CHAOS_REQUESTS"] != nil,
                "the queue's chaos test runs alone: XCALLBACK_QUEUE_CHAOS_REQUESTS=50000 swift test --filter QueueChaosTests (.ci/stress does)"),
       .requires(.postgres),
       .serialized,
       .scaledTimeLimit(minutes: 10))
struct QueueChaosTests {
    @Test("three hosts, SIGKILLs and terminated connections: every request has exactly one recorded outcome")
    func chaos() throws {
        try run(restartingServer: false)
    }

    @Test("the same, and PostgreSQL stopped as by a crash and started again mid-run")
    func chaosWithServerRestart() throws {
        try run(restartingServer: true)
    }

    private func run(restartingServer: Bool) throws {
        let environment = ProcessInfo.processInfo.environment
        let count = environment["XCALLBACK_QUEUE_CHAOS_REQUESTS"].flatMap(Int.init) ?? 50_000
        let seed = environment["XCALLBACK_QUEUE_CHAOS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed)
        // A server of its own to stop: the shared one serves other tests.
        let cluster = try restartingServer ? TestPostgres.startCluster(named: "xcb-pg-chaos") : nil
        defer {
            if let cluster {
                TestPostgres.stopCluster(in: cluster.folder)
                try? FileManager.default.removeItem(atPath: cluster.folder)
            }
        }
        let queue: String
        if let cluster {
            let initialized = try xcallback(["queue", "init", cluster.url])
            try #require(initialized.status == .exited(0), "\(initialized.stderr)")
            queue = cluster.url
        } else {
            queue = try TestPostgres.initializedDatabase()
        }
        let fixture = try HostFixture(isolation: "process")

        // About 1 in 200 crashes its worker and 1 in 500 hangs past the
        // deadline; the rest are Calculator additions.
        var lines: [String] = []
        for index in 0..<count {
            switch index % 1_000 {
            case 17, 217, 417, 617, 817: lines.append("faulty://x-callback-url/crash?n=\(index)")
            case 99, 599: lines.append("faulty://x-callback-url/hang?n=\(index)")
            default: lines.append("calc://x-callback-url/add?lhs=\(index)&rhs=1")
            }
        }
        let enqueued = try xcallback(["enqueue", "--queue", queue, "--max-attempts", "5"], lines: lines, timeout: 300)
        try #require(enqueued.status == .exited(0), "\(enqueued.stderr)")
        try #require(enqueued.lines.count == count)

        let hostArguments = ["--queue", queue, "--lease", "2", "--timeout", "1", "--grace-period", "1", "--log-level", "info"]
            // A host started while the server is down waits for it.
            + (restartingServer ? ["--wait-for-database", "60"] : [])
        func startHost() throws -> ChildProcess { try fixture.start(hostArguments, stdin: .null) }
        var hosts = [try startHost(), try startHost(), try startHost()]
        var retired: [ChildProcess] = []
        var kills = 0, terminations = 0, serverRestarts = 0
        let started = Date()
        let limit = Date(timeIntervalSinceNow: TestTiming.scaled(480))
        // The chaos every run must see, in order: every host's connections
        // terminated, a kill (or, in the second run, the server stopped as
        // by a crash), the connections again, two kills. Each event comes
        // after a pause (1 to 2 s; a fraction of one for a short run) or
        // as soon as its share of the queue is done, whichever is first:
        // a queue fast enough to drain between two pauses still meets the
        // whole plan mid-run. After the plan, a kill every pause.
        enum Event { case terminate, restartServer, kill }
        let plan: [Event] = [.terminate, restartingServer ? .restartServer : .kill, .terminate, .kill, .kill]
        let pause: ClosedRange<UInt64> = count >= 20_000 ? 1_000_000...2_000_000 : 300_000...800_000
        var nextAt = Date(timeIntervalSinceNow: Double(UInt64.random(in: pause, using: &random)) / 1e6)
        var fired = 0
        while Date() < limit {
            let status = try QueueTests.status(queue)
            let finished = status["done"]! + status["dead"]!
            if finished >= Double(count) { break }
            let share = Double(fired + 1) / Double(plan.count + 2)
            guard Date() >= nextAt || (fired < plan.count && finished >= share * Double(count)) else {
                usleep(250_000)
                continue
            }
            switch fired < plan.count ? plan[fired] : .kill {
            case .terminate:
                _ = try TestPostgres.psql(queue, """
                    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE application_name LIKE 'xcallback host%' AND datname = current_database()
                    """)
                terminations += 1
            case .restartServer:
                // Down for 1 to 3 s: every host's connections and
                // uncommitted work are gone, and leases run out meanwhile.
                guard let cluster else { break }
                TestPostgres.stopCluster(in: cluster.folder)
                usleep(UInt32(UInt64.random(in: 1_000_000...3_000_000, using: &random)))
                try TestPostgres.resumeCluster(in: cluster.folder)
                serverRestarts += 1
            case .kill:
                let victim = Int(random.next() % UInt64(hosts.count))
                kill(hosts[victim].pid, SIGKILL)
                _ = hosts[victim].waitForExit(timeout: 10)
                retired.append(hosts[victim])
                hosts[victim] = try startHost()
                kills += 1
            }
            fired += 1
            nextAt = Date(timeIntervalSinceNow: Double(UInt64.random(in: pause, using: &random)) / 1e6)
        }
        // A host SIGTERMed before it has set up its signal handling (just
        // started again) dies of it: wait until each one consumes.
        for host in hosts { #expect(host.waitForStderr(containing: "consuming", timeout: 30), "\(host.stderr.suffix(2_000))") }
        for host in hosts { host.send(signal: SIGTERM) }
        for host in hosts { #expect(host.waitForExit(timeout: 60) == .exited(0), "\(host.stderr.suffix(2_000))") }
        let seconds = Date().timeIntervalSince(started)

        let figures = try TestPostgres.psql(queue, """
            SELECT count(*) || ' ' || count(DISTINCT request_id) || ' ' || coalesce(sum(attempts - 1), 0) || ' '
                   || count(*) FILTER (WHERE dead) || ' ' || (SELECT count(*) FROM xcallback.requests)
                   || ' ' || count(*) FILTER (WHERE outcome = 'success')
            FROM xcallback.outcomes
            """).split(separator: " ").map { Int($0)! }
        let (outcomes, distinct, reExecutions, dead, left, succeeded) = (figures[0], figures[1], figures[2], figures[3], figures[4], figures[5])
        // What the requests that did not succeed ended in, by kind and error code.
        let failures = try TestPostgres.psql(queue, """
            SELECT string_agg(kind || ' ' || n, ', ') FROM (
                SELECT split_part(split_part(line, '?', 1), '/', 4) || ':' || outcome || ':' ||
                       coalesce(substring(params FROM 'errorCode=([A-Za-z]+)'), '-') AS kind, count(*) AS n
                FROM xcallback.outcomes WHERE outcome <> 'success' GROUP BY 1 ORDER BY 2 DESC) AS t
            """)
        let ids = Set(enqueued.lines.map { Int($0)! })
        let recordedIDs = Set(try TestPostgres.psql(queue, "SELECT request_id FROM xcallback.outcomes")
            .split(separator: "\n").map { Int($0)! })
        print("""
            queue chaos (seed \(seed)): \(count) requests, \(outcomes) outcomes (\(succeeded) successes), \
            \(reExecutions) re-executions, \(dead) dead, \(left) left in the queue; \(kills) SIGKILLs, \
            \(terminations) connection terminations, \(serverRestarts) server restarts, \(String(format: "%.1f", seconds)) s; not successes: \(failures)
            """)
        #expect(outcomes == count, "seed \(seed)")
        #expect(distinct == count, "seed \(seed)")
        #expect(left == 0, "seed \(seed)")
        #expect(recordedIDs == ids, "seed \(seed)")
        #expect(kills >= (restartingServer ? 2 : 3) && terminations == 2 && serverRestarts == (restartingServer ? 1 : 0),
                "the run ended before the chaos did (seed \(seed))")
        if restartingServer {
            // The hosts lived through the outage, not around it.
            #expect((retired + hosts).contains { $0.stderr.contains("works again after") },
                    "no host said its connection works again (seed \(seed))")
        }
        // Host stdout: each record is written only by the host that recorded it.
        let written = (retired + hosts).map(\.stdoutLines.count).reduce(0, +)
        #expect(written <= count)
    }
}
