import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL server the queue tests use: real, from Debian's packages,
/// started once per test process by `.ci/postgres` in a temporary folder
/// (a Unix socket there, no TCP port) and stopped when the process exits.
/// Each test gets a database of its own. `XCALLBACK_TEST_POSTGRES` (a
/// postgresql:// URL of a role that may create databases) names another
/// server instead.
///
/// Where there is no server the tests are skipped with a message, except
/// under CI (`CI` set), where they must run: there they fail instead
/// (`.requires(.postgres)`, Requirements.swift).
enum TestPostgres {
    static let repository: String = {
        var path = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { path.deleteLastPathComponent() }
        return path.path
    }()

    /// Whether this run was built with the package's Queue trait (the
    /// queue's code and its database client); without it `xcallback-queue`
    /// only says how to build it.
    #if Queue
    static let queueBuilt = true
    #else
    static let queueBuilt = false
    #endif
    static let queueNotBuilt = "the durable queue is not built into this run: `swift test --traits Queue` builds it (and its database client) and runs its tests"

    private static let server: Result<String, HarnessError> = {
        if let url = ProcessInfo.processInfo.environment["XCALLBACK_TEST_POSTGRES"] { return .success(url) }
        if let problem = Requirement.postgres.problem {
            return .failure(HarnessError("\(problem): \(Requirement.postgres.need)"))
        }
        let started = Result { () throws(HarnessError) in try startCluster(named: "xcb-pg") }
        guard case .success(let cluster) = started else { return started.map(\.url) }
        folder = cluster.folder
        atexit {
            if let folder = TestPostgres.folder {
                TestPostgres.stopCluster(in: folder)
                try? FileManager.default.removeItem(atPath: folder)
            }
        }
        return .success(cluster.url)
    }()

    /// A throw-away cluster (`.ci/postgres`) in a new temporary folder
    /// named after `name`: the folder, and the cluster's URL.
    static func startCluster(named name: String) throws(HarnessError) -> (folder: String, url: String) {
        var template = Array("/tmp/\(name)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed") }
        let folder = String(cString: made)
        let start = try? ChildProcess([repository + "/.ci/postgres", "start", folder], executable: "/usr/bin/env")
        guard let start, start.waitForExit(timeout: 120) == .exited(0) else {
            throw HarnessError("could not start PostgreSQL: \(start?.stderr ?? "")")
        }
        return (folder, start.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Stops the cluster `startCluster` made in `folder` (the caller removes the folder).
    static func stopCluster(in folder: String) {
        let stop = try? ChildProcess([repository + "/.ci/postgres", "stop", folder], executable: "/usr/bin/env")
        _ = stop?.waitForExit(timeout: 60)
    }

    /// Starts again the cluster `stopCluster` stopped in `folder`, with its data.
    static func resumeCluster(in folder: String) throws(HarnessError) {
        let resume = try? ChildProcess([repository + "/.ci/postgres", "resume", folder], executable: "/usr/bin/env")
        guard let resume, resume.waitForExit(timeout: 120) == .exited(0) else {
            throw HarnessError("could not start PostgreSQL again: \(resume?.stderr ?? "")")
        }
    }

    nonisolated(unsafe) private static var folder: String?
    private static let counter = NSLock()
    nonisolated(unsafe) private static var databases = 0

    /// The server's URL (its `postgres` database).
    static func serverURL() throws -> String { try server.get() }

    /// A new, empty database; returns its queue URL.
    static func database() throws -> String {
        let url = try serverURL()
        let name = counter.withLock { () -> String in
            databases += 1
            return "xcb_\(getpid())_\(databases)"
        }
        try psql(url, "CREATE DATABASE \(name)")
        return url.replacingOccurrences(of: "/postgres?", with: "/\(name)?")
    }

    /// Runs SQL with psql; returns its unaligned, tuples-only output.
    @discardableResult
    static func psql(_ url: String, _ sql: String) throws -> String {
        let child = try ChildProcess(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                                     executable: "/usr/bin/env")
        guard child.waitForExit(timeout: 60) == .exited(0) else {
            throw HarnessError("psql failed for \(sql): \(child.stderr)")
        }
        return child.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `xcallback queue init URL`, which must succeed.
    static func initializedDatabase() throws -> String {
        let url = try database()
        let result = try xcallback(["queue", "init", url])
        guard result.status == .exited(0) else { throw HarnessError("queue init failed: \(result.stderr)") }
        return url
    }
}
