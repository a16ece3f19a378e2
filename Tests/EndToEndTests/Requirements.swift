// What some tests need from the machine that a contributor's laptop may
// lack: a tool that works (not merely one that is installed: a rustup shim
// with no default toolchain is a `cargo` that cannot run), a server, a
// privilege. The harness's one way to say so:
//
// - a test (or suite) that needs one carries `.requires(.cargo)`: where it is
//   missing the test is skipped with one line naming what is missing and how
//   to get it;
// - one case of a parameterized test calls `try .otherUser.cancelIfUnmet()`;
// - a step inside a test (a guide's block, an optional check) asks
//   `Requirement.cargo.skips("the block at line 40")`: true where it is
//   missing, after printing that line;
// - under CI (`CI` set) what CI installs is there on purpose: a missing one
//   fails the test, with what the probe said, instead of skipping it.

import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

struct Requirement: Sendable {
    /// What is needed and how to get it, in one line: the skip's reason.
    let need: String
    /// Whether CI installs it (.ci/run): then a missing one fails there.
    let ciProvides: Bool
    /// Why it is unmet here, nil when it is met. Probes once, may block.
    private let probe: @Sendable () -> String?

    init(_ need: String, ciProvides: Bool = true, probe: @escaping @Sendable () -> String?) {
        self.need = need
        self.ciProvides = ciProvides
        self.probe = probe
    }

    /// Set by CI, where what the tests need is installed on purpose.
    static let underCI = ProcessInfo.processInfo.environment["CI"] != nil

    /// Why it is unmet here (what the probe found), nil when it is met.
    /// Blocks while a probe runs: from a test on its own threads
    /// (`.ownThreads`), or through `offCooperativePool`.
    var problem: String? { probe() }

    /// Whether a test that needs it runs here: where it is met, and always
    /// under CI when CI provides it (to fail).
    var isMet: Bool { problem == nil }

    /// For a step inside a test: true, after printing why, where it cannot
    /// run; under CI, when CI provides it, an issue is recorded too.
    func skips(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let problem else { return false }
        print("\(step): skipped, \(need)")
        if Self.underCI && ciProvides {
            Issue.record("\(step): \(problem); CI installs it, so this is a failure", sourceLocation: sourceLocation)
        }
        return true
    }

    /// For one case of a parameterized test: where it is unmet, cancels
    /// the case saying what is missing (fails it under CI, when CI provides it).
    func cancelIfUnmet(sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard problem != nil else { return }
        if Self.underCI && ciProvides { try require(sourceLocation: sourceLocation) }
        try Test.cancel(Comment(rawValue: need), sourceLocation: sourceLocation)
    }

    /// Fails (throws) with why, where it is unmet: for a test that needs it
    /// and ran anyway (under CI).
    func require(sourceLocation: SourceLocation = #_sourceLocation) throws {
        if let problem {
            throw HarnessError("\(problem): \(need); CI is set, so this is a failure")
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test where `requirement` is met. Elsewhere it is skipped,
    /// saying what is missing and how to get it; under CI, when CI provides
    /// it, the test fails instead (a condition that throws is an issue).
    static func requires(_ requirement: Requirement, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(Comment(rawValue: requirement.need), sourceLocation: sourceLocation) {
            // The probe may start a process: not on a cooperative thread.
            guard let problem = await offCooperativePool({ requirement.problem }) else { return true }
            if Requirement.underCI && requirement.ciProvides {
                throw HarnessError("\(problem): \(requirement.need); CI is set, so this is a failure")
            }
            return false
        }
    }
}

// MARK: - What the tests need

extension Requirement {
    /// cargo, able to say its version: the Rust binding's tests.
    static let cargo = Requirement(
        "needs a working cargo for the Rust binding's tests: install Rust (https://rustup.rs, "
            + "then `rustup default stable`) or Debian's cargo") { cargoProblem }

    /// Where a working cargo is: installed, and able to say its version.
    static var cargoPath: String? { cargoProbe.path }

    private static var cargoProblem: String? { cargoProbe.problem }

    private static let cargoProbe: (path: String?, problem: String?) = {
        let candidates = ["/usr/local/cargo/bin/cargo", "/usr/bin/cargo", NSHomeDirectory() + "/.cargo/bin/cargo"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { $0 + "/cargo" }
        guard let path = candidates.first(where: { access($0, X_OK) == 0 }) else { return (nil, "cargo is not installed") }
        if let problem = toolProblem([path, "--version"]) { return (nil, problem) }
        return (path, nil)
    }()

    /// The durable queue built in (the Queue trait) and a PostgreSQL server:
    /// the queue's tests.
    static let postgres = Requirement(
        TestPostgres.queueBuilt
            ? "needs PostgreSQL for the queue's tests: apt-get install postgresql (the tests start their own "
                + "server in a temporary folder), or set XCALLBACK_TEST_POSTGRES to a postgresql:// URL"
            : TestPostgres.queueNotBuilt) { postgresProblem }

    private static let postgresProblem: String? = {
        if !TestPostgres.queueBuilt { return "the Queue trait is not built" }
        if ProcessInfo.processInfo.environment["XCALLBACK_TEST_POSTGRES"] != nil { return nil }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted()
        guard let initdb = versions.reversed().map({ "/usr/lib/postgresql/\($0)/bin/initdb" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return "no PostgreSQL server (no /usr/lib/postgresql/*/bin/initdb) and no XCALLBACK_TEST_POSTGRES"
        }
        return toolProblem([initdb, "--version"])
    }()

    /// Root, to act as another user (`nobody`, `PeerTrustTests.other`), and
    /// a build that user can reach. Not failed under CI: a checkout in a
    /// folder closed to others is a choice, not a missing package.
    static let otherUser = Requirement(PeerTrustTests.otherMissing ?? "needs root, to act as another user",
                                       ciProvides: false) {
        PeerTrustTests.otherMissing
    }

    /// A C compiler at /usr/bin/cc.
    static let cc = Requirement("needs a C compiler at /usr/bin/cc: apt-get install gcc") { ccProblem }
    private static let ccProblem = toolProblem(["/usr/bin/cc", "--version"])

    /// clang that builds a WebAssembly module with wasm-ld (the Swift
    /// toolchain's does; so does Debian's clang with lld).
    static let wasmClang = Requirement("needs clang with the wasm32 target and wasm-ld: the Swift toolchain's, or apt-get install clang lld") {
        wasmClangProblem
    }
    private static let wasmClangProblem = toolProblem([
        "sh", "-c", "d=$(mktemp -d) && echo 'int f(void){return 0;}' > $d/p.c && "
            + "clang --target=wasm32 -nostdlib -Wl,--no-entry -Wl,--export=f -o $d/p.wasm $d/p.c; s=$?; rm -rf $d; exit $s",
    ])

    /// man, to render the manual page.
    static let man = Requirement("needs man to render the manual page: apt-get install man-db") { manProblem }
    private static let manProblem = toolProblem(["/usr/bin/man", "--version"])

    /// python3 at /usr/bin/python3 (a stand-in peer).
    static let python3 = Requirement("needs /usr/bin/python3: apt-get install python3") { python3Problem }
    private static let python3Problem = toolProblem(["/usr/bin/python3", "--version"])

    /// GLib's launcher (CI does not install it).
    static let gio = Requirement("needs gio: apt-get install libglib2.0-bin", ciProvides: false) {
        executableOnPath("gio") == nil ? "gio is not on PATH" : nil
    }

    /// xdg-mime and xdg-open (.ci/run installs xdg-utils).
    static let xdgUtils = Requirement("needs xdg-mime and xdg-open: apt-get install xdg-utils") {
        executableOnPath("xdg-mime") == nil || executableOnPath("xdg-open") == nil ? "xdg-mime or xdg-open is not on PATH" : nil
    }

    /// Why `command` (a version query) does not run here, nil when it exits 0.
    static func toolProblem(_ command: [String], environment: [String: String]? = nil) -> String? {
        guard let child = try? ChildProcess(command, executable: "/usr/bin/env", environment: environment) else {
            return "\(command[0]) could not be started"
        }
        let status = child.waitForExit(timeout: 60)
        guard status == .exited(0) else {
            let said = child.stderr.split(separator: "\n").first.map { ": \($0)" } ?? ""
            return "`\(command.joined(separator: " "))` ended \(status)\(said)"
        }
        return nil
    }
}
