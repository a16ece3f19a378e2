import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A queue's roles are its own, and its host and enqueue roles write only
/// through its functions: what an operator broke with a real PostgreSQL
/// (issue 43) is refused. Every login here is this process's own (roles
/// are the server's, not a database's).
@Suite("Durable queue: roles per queue, writes only through the queue's functions", .ownThreads,
       .requires(.postgres), .serialized, .scaledTimeLimit(minutes: 4))
struct QueueRoleTests {
    /// The database a test URL names (`postgresql://xcallback@/DB?host=…`).
    static func databaseName(_ url: String) -> String {
        let path = url[url.range(of: "@/")!.upperBound...]
        return String(path.prefix { $0 != "?" })
    }

    /// The URL psql accepts for `queue` (no `schema` option).
    static func psqlURL(_ queue: String) throws -> String {
        let result = try xcallback(["queue", "url", queue, "--psql"])
        guard result.status == .exited(0) else { throw HarnessError("queue url failed: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `--print-grants` for `queue`, run as its owner.
    static func grant(_ queue: String) throws {
        let grants = try xcallback(["queue", "init", queue, "--print-grants"])
        guard grants.status == .exited(0) else { throw HarnessError("--print-grants failed: \(grants.stderr)") }
        try TestPostgres.psql(try psqlURL(queue), grants.stdout)
    }

    /// A new login in `group`; returns `queue` as that login.
    static func login(_ queue: String, in group: String) throws -> String {
        let name = "xcb_login_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        try TestPostgres.psql(try psqlURL(queue), "CREATE ROLE \(name) LOGIN IN ROLE \"\(group)\"")
        let url = queue.replacingOccurrences(of: "postgresql://xcallback@", with: "postgresql://\(name)@")
        guard url != queue else { throw HarnessError("the test's URL has no user to replace: \(queue)") }
        return url
    }

    static func refused(_ url: String, _ statements: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let target = try psqlURL(url)
        for statement in statements {
            #expect(throws: HarnessError.self, "allowed: \(statement)", sourceLocation: sourceLocation) {
                try TestPostgres.psql(target, statement)
            }
        }
    }

    @Test("a login of one queue's host role reads, claims and writes nothing of a queue in another database or another schema")
    func rolesArePerQueue() throws {
        let a = try TestPostgres.initializedDatabase()
        let b = try TestPostgres.initializedDatabase()
        let orders = a + "&schema=orders"
        let initialized = try xcallback(["queue", "init", orders])
        try #require(initialized.status == .exited(0), "\(initialized.stderr)")
        for queue in [a, b, orders] { try Self.grant(queue) }
        let (databaseA, databaseB) = (Self.databaseName(a), Self.databaseName(b))
        let hostA = try Self.login(a, in: "\(databaseA).xcallback.host")
        let readerA = try Self.login(a, in: "\(databaseA).xcallback.reader")
        for queue in [b, orders] {
            let enqueued = try QueueTests.enqueue(queue, QueueTests.additions(3))
            try #require(enqueued.status == .exited(0), "\(enqueued.stderr)")
        }

        // Its own queue: yes.
        #expect(try TestPostgres.psql(try Self.psqlURL(hostA), "SELECT count(*) FROM xcallback.requests") == "0")
        #expect(try QueueTests.status(readerA)["ready"] == 0)
        // The same login, on the queue of the same schema in database B, and
        // on the other schema of its own database: nothing.
        let inB = [hostA, readerA].map { $0.replacingOccurrences(of: "/\(databaseA)?", with: "/\(databaseB)?") }
        let inOrders = [hostA, readerA].map { $0 + "&schema=orders" }
        for (url, schema) in [(inB[0], "xcallback"), (inB[1], "xcallback"), (inOrders[0], "orders"), (inOrders[1], "orders")] {
            try Self.refused(url, [
                "SELECT count(*) FROM \(schema).requests",
                "SELECT count(*) FROM \(schema).outcomes",
                "SELECT \(schema).register_host('intruder:1', 60)",
                "SELECT count(*) FROM \(schema).claim(1, 10, 60)",
                "UPDATE \(schema).requests SET leased_by = 42",
            ])
        }
        for url in inB + inOrders {
            let status = try xcallback(["queue", "status", url])
            #expect(status.status == .exited(1) && status.stderr.contains("permission denied"), "\(url): \(status.stdout)\(status.stderr)")
        }
        let fixture = try HostFixture()
        let intruder = try QueueTests.startHost(fixture, inB[0])
        #expect(intruder.waitForExit(timeout: 60) == .exited(1), "\(intruder.stderr)")
        #expect(intruder.stderr.contains("permission denied"), "\(intruder.stderr)")
        #expect(try QueueTests.status(b)["ready"] == 3)
        #expect(try QueueTests.status(orders)["ready"] == 3)
    }

    @Test("a host login records only for leases its own registered host holds: a made-up lease or another login's host records nothing")
    func forgedOutcomesAreRefused() throws {
        let owner = try TestPostgres.initializedDatabase()
        try Self.grant(owner)
        let database = Self.databaseName(owner)
        let host = try Self.psqlURL(try Self.login(owner, in: "\(database).xcallback.host"))
        let other = try Self.psqlURL(try Self.login(owner, in: "\(database).xcallback.host"))
        let ids = try QueueTests.enqueue(owner, QueueTests.additions(3)).lines
        try #require(ids.count == 3)
        // The owner's host holds the first request (attempt 1).
        let ownerHost = try TestPostgres.psql(owner, "SELECT xcallback.register_host('owner:1', 600)")
        #expect(try TestPostgres.psql(owner, "SELECT claimed_id FROM xcallback.claim(\(ownerHost), 1, 600)") == ids[0])
        let loginHost = try TestPostgres.psql(host, "SELECT xcallback.register_host('login:1', 600)")

        // Writes of its own: refused.
        try Self.refused(host, [
            "UPDATE xcallback.requests SET leased_by = 42 WHERE id = \(ids[1])",
            "UPDATE xcallback.requests SET leased_by = \(loginHost), attempt = 1 WHERE id = \(ids[1])",
            "UPDATE xcallback.requests SET strikes = 99, alone = true",
            "DELETE FROM xcallback.requests",
            "INSERT INTO xcallback.hosts (id, name, expires_at) VALUES (42, 'fake:1', now() + interval '1 hour')",
            "UPDATE xcallback.hosts SET expires_at = now() - interval '1 hour'",
            "DELETE FROM xcallback.hosts",
            "INSERT INTO xcallback.outcomes (request_id, line, outcome, params, attempts, host, enqueued_at) VALUES (\(ids[1]), 'forged://', 'success', '', 1, 'x', now())",
        ])
        // Through the functions, for leases it does not hold: nothing.
        func record(_ id: String, attempt: Int, host: String) -> String {
            """
            SELECT xcallback.record_outcomes(ARRAY[\(id)]::int8[], ARRAY[\(attempt)], ARRAY[\(host)]::int8[],
                ARRAY['success'], ARRAY['result=1000000'], ARRAY[''], 'forger:1')
            """
        }
        func dead(_ id: String) -> String {
            """
            SELECT xcallback.record_dead(ARRAY[\(id)]::int8[], ARRAY['error'],
                ARRAY['errorCode=Abandoned&errorDomain=xcallback'], ARRAY[''], 'forger:1')
            """
        }
        #expect(try TestPostgres.psql(host, record(ids[1], attempt: 0, host: "42")) == "")
        #expect(try TestPostgres.psql(host, record(ids[1], attempt: 1, host: loginHost)) == "")
        #expect(try TestPostgres.psql(host, record(ids[0], attempt: 1, host: ownerHost)) == "")
        #expect(try TestPostgres.psql(host, dead(ids[0])) == "0")
        #expect(try TestPostgres.psql(host, dead(ids[1])) == "0")
        #expect(try TestPostgres.psql(host, "SELECT xcallback.heartbeat(\(ownerHost), 600)") == "f")
        #expect(try TestPostgres.psql(host, "SELECT xcallback.unregister_host(\(ownerHost))") == "0")
        try TestPostgres.psql(host, "SELECT xcallback.release(ARRAY[\(ids[0])]::int8[], ARRAY[1], ARRAY[\(ownerHost)]::int8[])")
        #expect(try TestPostgres.psql(owner, "SELECT leased_by, attempt FROM xcallback.requests WHERE id = \(ids[0])") == "\(ownerHost)|1")
        #expect(try TestPostgres.psql(owner, "SELECT count(*) FROM xcallback.outcomes") == "0")

        // Its own host's lease: recorded; another login of the same role
        // cannot record for that host.
        #expect(try TestPostgres.psql(host, "SELECT claimed_id FROM xcallback.claim(\(loginHost), 1, 600)") == ids[1])
        #expect(try TestPostgres.psql(other, record(ids[1], attempt: 1, host: loginHost)) == "")
        // To another login, that host is no host of its own: its lease is gone (marker 1).
        #expect(try TestPostgres.psql(other, "SELECT marker FROM xcallback.claim(\(loginHost), 1, 600)") == "1")
        #expect(try TestPostgres.psql(host, record(ids[1], attempt: 1, host: loginHost)) == ids[1])
        #expect(try TestPostgres.psql(owner, "SELECT request_id, params FROM xcallback.outcomes") == "\(ids[1])|result=1000000")
    }

    @Test("an enqueue login chooses no id and skips no check: requests go in only through enqueue(), ids from the sequence")
    func enqueueLoginChoosesNoID() throws {
        let owner = try TestPostgres.initializedDatabase()
        try Self.grant(owner)
        let enqueuer = try Self.login(owner, in: "\(Self.databaseName(owner)).xcallback.enqueue")
        let url = try Self.psqlURL(enqueuer)
        try Self.refused(enqueuer, [
            "INSERT INTO xcallback.requests (id, line, max_attempts) VALUES (999999, 'calc://x-callback-url/add', 1)",
            "SELECT nextval('xcallback.request_ids')",
            "INSERT INTO xcallback.request_keys (key, request_id) VALUES ('k', 5)",
            "SELECT count(*) FROM xcallback.request_keys",
            "SELECT count(*) FROM xcallback.outcomes",
            "UPDATE xcallback.requests SET line = ''",
        ])
        // enqueue() checks each line as `xcallback enqueue` does.
        for (lines, keys) in [("ARRAY['not a url']", "ARRAY['']"),
                              ("ARRAY[E'calc://x-callback-url/add\\ncalc://x-callback-url/add']", "ARRAY['']"),
                              ("ARRAY[E'calc://x-callback-url/add?lhs=\\x01']", "ARRAY['']"),
                              ("ARRAY['calc://' || repeat('a', 1048576)]", "ARRAY['']"),
                              ("ARRAY['calc://x-callback-url/add']", "ARRAY[E'key\\t1']"),
                              ("ARRAY['calc://x-callback-url/add', 'calc://x-callback-url/add']", "ARRAY['']")] {
            #expect(throws: HarnessError.self, "\(lines) \(keys)") {
                try TestPostgres.psql(url, "SELECT xcallback.enqueue(\(lines), \(keys), 3)")
            }
        }
        #expect(throws: HarnessError.self) {
            try TestPostgres.psql(url, "SELECT xcallback.enqueue(ARRAY['calc://x-callback-url/add'], ARRAY[''], 0)")
        }
        // What it may: enqueue, through the command, keys and all.
        let first = try QueueTests.enqueue(enqueuer, ["calc://x-callback-url/add?lhs=1&rhs=1",
                                                      "k1\tcalc://x-callback-url/add?lhs=2&rhs=1",
                                                      "k1\tcalc://x-callback-url/add?lhs=3&rhs=1"])
        #expect(first.status == .exited(0) && first.lines.count == 3, "\(first.stderr)")
        let again = try QueueTests.enqueue(enqueuer, ["k1\tcalc://x-callback-url/add?lhs=2&rhs=1",
                                                      "calc://x-callback-url/add?lhs=4&rhs=1"])
        #expect(again.status == .exited(0) && again.lines.count == 2, "\(again.stderr)")
        let ids = first.lines + again.lines
        #expect(ids.compactMap(Int.init) == [1, 2, 2, 2, 3], "\(ids)")
        #expect(try TestPostgres.psql(owner, "SELECT string_agg(id::text, ',' ORDER BY id) FROM xcallback.requests") == "1,2,3")
        #expect(try TestPostgres.psql(owner, "SELECT last_value FROM xcallback.request_ids") == "3")
    }

    @Test("docs/queue.md's role set-up runs as written, as an owner with CREATEROLE, and its logins work with their passwords")
    func documentedRoleSetUp() throws {
        // A cluster of its own: the block names database jobs and logins
        // worker1 …, and this one asks every other login for its password.
        let (folder, server) = try TestPostgres.startCluster(named: "xcb-roles")
        defer {
            TestPostgres.stopCluster(in: folder)
            try? FileManager.default.removeItem(atPath: folder)
        }
        try Data("local all xcallback,owner trust\nlocal all all scram-sha-256\n".utf8)
            .write(to: URL(fileURLWithPath: folder + "/data/pg_hba.conf"))
        try TestPostgres.psql(server, "SELECT pg_reload_conf()")
        try TestPostgres.psql(server, "CREATE ROLE owner LOGIN CREATEROLE")
        try TestPostgres.psql(server, "CREATE DATABASE jobs OWNER owner")
        let queue = "postgresql://owner@/jobs?host=\(folder)&schema=xcallback"
        let initialized = try xcallback(["queue", "init", queue])
        try #require(initialized.status == .exited(0), "\(initialized.stderr)")

        let doc = try String(contentsOfFile: TestPostgres.repository + "/docs/queue.md", encoding: .utf8)
        let block = try #require(ShellBlock.all(in: doc, directivePrefix: "<!-- queue-doc-test:")
            .first { $0.directive.contains("roles") }, "docs/queue.md has no block marked queue-doc-test: roles")
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = Products.directory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["QUEUE"] = queue
        let passwords = ["worker1": "w-\(UInt32.random(in: 0...UInt32.max))", "producer1": "p-\(UInt32.random(in: 0...UInt32.max))",
                         "viewer1": "v-\(UInt32.random(in: 0...UInt32.max))"]
        for (login, password) in passwords { environment[login.uppercased() + "_PASSWORD"] = password }
        let script = "set -euo pipefail\n" + block.lines.joined(separator: "\n") + "\n"
        let shell = try ChildProcess(["-c", script], executable: "/bin/bash", environment: environment)
        #expect(shell.waitForExit(timeout: 60) == .exited(0), "docs/queue.md:\(block.line): \(shell.stderr)")

        // The logins, their passwords in a password file as the doc says.
        let passfile = folder + "/pgpass"
        try Data(passwords.map { "*:*:jobs:\($0.key):\($0.value)\n" }.joined().utf8).write(to: URL(fileURLWithPath: passfile))
        chmod(passfile, 0o600)
        var logins = ProcessInfo.processInfo.environment
        logins["PGPASSFILE"] = passfile
        func queueAs(_ login: String) -> String { "postgresql://\(login)@/jobs?host=\(folder)" }
        let enqueue = try ChildProcess(["enqueue", "--queue", queueAs("producer1")],
                                       stdin: .bytes(Array("calc://x-callback-url/add?lhs=2&rhs=3\n".utf8)), environment: logins)
        #expect(enqueue.waitForExit(timeout: 60) == .exited(0), "\(enqueue.stderr)")
        let fixture = try HostFixture()
        let host = try ChildProcess(fixture.runPrefix + ["--queue", queueAs("worker1"), "--lease", "2", "--output", "jsonl"],
                                    stdin: .null, environment: logins)
        #expect(host.waitForStdoutLines(1, timeout: 60), "\(host.stderr)")
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 30) == .exited(0), "\(host.stderr)")
        let outcomes = try ChildProcess(["outcomes", "--queue", queueAs("viewer1")], environment: logins)
        #expect(outcomes.waitForExit(timeout: 60) == .exited(0) && outcomes.stdoutLines.count == 1, "\(outcomes.stderr)")
        // The server does check them.
        logins["PGPASSFILE"] = "/nonexistent"
        logins["PGPASSWORD"] = "wrong"
        let wrong = try ChildProcess(["queue", "status", queueAs("viewer1")], environment: logins)
        #expect(wrong.waitForExit(timeout: 60) == .exited(1) && wrong.stderr.contains("28P01"), "\(wrong.stderr)")
        // A password file others may read is not read, and the error says so, as libpq says it.
        chmod(passfile, 0o644)
        logins["PGPASSFILE"] = passfile
        logins["PGPASSWORD"] = nil
        let exposed = try ChildProcess(["queue", "status", queueAs("viewer1")], environment: logins)
        #expect(exposed.waitForExit(timeout: 60) == .exited(1), "\(exposed.stderr)")
        #expect(exposed.stderr.contains("none was given (PGPASSWORD, ~/.pgpass, or the URL); password file \"\(passfile)\" has group or world access; permissions should be u=rw (0600) or less"),
                "\(exposed.stderr)")
    }
}
