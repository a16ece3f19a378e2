import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A worker gets the calls and the files it is allowed, in a view built for
/// it, and never the root uid (issue 41). Before, the seccomp filter listed
/// what to refuse and Landlock had no rule for a file's metadata: a plug-in
/// made a root-owned shell set-uid root, opened the host user's 0700 folder
/// to everyone, changed times and xattrs, and watched another folder with
/// inotify.
@Suite("Containment by allow-list", .ownThreads, .serialized)
struct ContainmentTests {
    /// A host with the container plug-in and the calculator.
    final class Session: @unchecked Sendable {
        let fixture: HostFixture
        let host: ChildProcess
        private var answered = 0

        init(asOtherUser: Bool = false, arguments: [String] = []) throws {
            fixture = try ContainmentTests.fixture()
            let command = fixture.runPrefix + ["--output", "jsonl", "--restart-limit", "1000"] + arguments
            if asOtherUser {
                #expect(chmod(fixture.scratch.path, 0o755) == 0)
                host = try ChildProcess(PeerTrustTests.asOther([Products.xcallback] + command),
                                        executable: "/usr/bin/env", stdin: .pipe)
            } else {
                host = try ChildProcess(command, stdin: .pipe)
            }
        }

        func ask(_ line: String) throws -> Record {
            #expect(host.write(line + "\n"))
            answered += 1
            try #require(host.waitForStdoutLines(answered, timeout: TestTiming.scaled(10)),
                         "no record for \(line); stderr: \(host.stderr)")
            return try Record(jsonLine: host.stdoutLines[answered - 1])
        }

        func contain(_ route: String) throws -> Record { try ask("contain://x-callback-url/\(route)") }

        func expectHostAlive(sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(try ask("calc://x-callback-url/add?lhs=2&rhs=3").params["result"] == "5", sourceLocation: sourceLocation)
        }

        func finish() {
            host.closeInput()
            #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
        }
    }

    /// A process-isolated host's fixture with the Calculator and the
    /// container plug-in, whose capability file says `capabilities` (none
    /// when nil).
    static func fixture(capabilities: String? = nil) throws -> HostFixture {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        try TestPlugin.build(ContainmentPlugin.name, source: ContainmentPlugin.source, into: fixture.plugins)
        if let capabilities {
            try Data(capabilities.utf8).write(to: URL(fileURLWithPath: fixture.plugins + "/lib\(ContainmentPlugin.name).caps.toml"))
        }
        return fixture
    }

    /// What a file outside every grant looks like, to compare after.
    struct FileState: Equatable {
        // The change time moves with any change of mode, owner, times or
        // extended attributes, so it stands for all of them.
        var mode: mode_t, owner: uid_t, modified: Int, changed: Int, contents: Data

        init(_ path: String) throws {
            var info = stat()
            guard stat(path, &info) == 0 else { throw HarnessError("stat \(path): \(errno)") }
            mode = info.st_mode
            owner = info.st_uid
            modified = info.st_mtim.tv_sec
            changed = info.st_ctim.tv_sec * 1_000_000_000 + info.st_ctim.tv_nsec
            contents = info.st_mode & S_IFMT == S_IFDIR ? Data() : try Data(contentsOf: URL(fileURLWithPath: path))
        }
    }

    static func expectFailed(_ record: Record, _ call: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(record.errorCode == "Denied", "\(record)", sourceLocation: sourceLocation)
        #expect(record.params["errorMessage"]?.hasPrefix(call + ":") == true, "\(record)", sourceLocation: sourceLocation)
    }

    /// Each metadata attack of the issue's table against a file and a
    /// folder outside every grant: each fails, and nothing about either
    /// changes. As root, the outside file is a root-owned copy of a shell,
    /// the one the attack made set-uid root.
    static func metadataAttacks(asOtherUser: Bool) throws {
        let session = try Session(asOtherUser: asOtherUser)
        let outside = session.fixture.scratch.file("outside")
        #expect(mkdir(outside, 0o700) == 0)
        let secret = outside + "/secret.key"
        try Data("the host user's key\n".utf8).write(to: URL(fileURLWithPath: secret))
        #expect(chmod(secret, 0o600) == 0)
        let shell = session.fixture.scratch.file("dash")
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: "/bin/sh").resolvingSymlinksInPath().path, toPath: shell)
        #expect(chmod(shell, 0o755) == 0)
        if asOtherUser, let other = PeerTrustTests.other {
            for path in [outside, secret] { #expect(chown(path, other.uid, other.gid) == 0) }
        }
        let before = try [outside, secret, shell].map(FileState.init)

        for path in [outside, secret, shell] {
            for (route, call) in [("chmod", "chmod"), ("utime", "utimensat"), ("setxattr", "setxattr"), ("stat", "stat"),
                                  ("inotify", "inotify_add_watch")] {
                let record = try session.contain("\(route)?path=\(percentEncoded(path))")
                expectFailed(record, call)
                // Not there at all: the worker's view holds no such path.
                #expect(record.params["errorMessage"]?.contains("No such file or directory") == true, "\(record)")
            }
        }
        try session.expectHostAlive()
        #expect(try [outside, secret, shell].map(FileState.init) == before, "a file outside every grant changed")
        // Its own scratch folder is its own, but no file in it is set-uid.
        #expect(try session.contain("own").params["result"] == "done")
        let setuid = try session.contain("setuid")
        #expect(setuid.params["errorMessage"] == "fchmod: Operation not permitted", "\(setuid)")
        // The plug-in file, through the descriptor its worker was handed,
        // keeps its mode (a read-only bind, or not the worker's file).
        let library = session.fixture.plugins + "/lib\(ContainmentPlugin.name).so"
        let libraryBefore = try FileState(library)
        Self.expectFailed(try session.contain("library"), "fchmod")
        #expect(try FileState(library) == libraryBefore)

        // A root host's worker is not root.
        let workers = hostProcesses(of: session.host.pid).filter { !isZygote($0) }
        #expect(!workers.isEmpty)
        for worker in workers {
            let uid = realUID(of: worker)
            #expect(uid != nil && uid != 0, "worker \(worker) runs as uid \(uid.map(String.init) ?? "?")")
        }
        session.finish()
    }

    @Test("chmod, utime, setxattr, stat and inotify outside every grant fail and change nothing; workers are not root")
    func metadataOutsideEveryGrant() throws {
        try Self.metadataAttacks(asOtherUser: false)
    }

    @Test("the same attacks with the host run by an ordinary user", .requires(.otherUser))
    func metadataAsOrdinaryUser() throws {
        try Self.metadataAttacks(asOtherUser: true)
    }

    /// What a worker sees of a few paths, and what it should: r readable,
    /// w writable, - not there. A root host's workers build their view from
    /// the zygote's template, an ordinary user's build it whole.
    static func viewSeen(asOtherUser: Bool) throws -> (seen: String, expected: String) {
        let session = try Session(asOtherUser: asOtherUser)
        let plugins = session.fixture.plugins
        let paths: [(String, Character)] = [
            ("/", "r"), ("/usr/lib", "r"), ("/etc/ld.so.cache", "r"), ("/proc/self/status", "r"),
            ("/sys/devices/system/cpu/online", "r"), (plugins, "r"), (plugins + "/lib\(ContainmentPlugin.name).so", "r"),
            ("/dev/null", "w"), ("/dev/urandom", "w"),
            ("/etc/passwd", "-"), ("/etc/shadow", "-"), ("/proc/1/status", "-"), ("/dev/mem", "-"), ("/sys/kernel", "-"),
            ("/usr/bin/env", "-"), ("/root", "-"), ("/home", "-"), ("/run", "-"),
        ]
        let record = try session.contain("sees?paths=\(percentEncoded(paths.map(\.0).joined(separator: ",")))")
        try session.expectHostAlive()
        session.finish()
        return (try #require(record.params["seen"], "\(record)"), String(paths.map(\.1)))
    }

    @Test("a root host's worker sees its libraries, devices and plug-in, and nothing else")
    func viewFromTemplate() throws {
        let view = try Self.viewSeen(asOtherUser: false)
        #expect(view.seen == view.expected)
    }

    @Test("the same view when each worker builds it whole (an ordinary user's host)", .requires(.otherUser))
    func viewBuiltWhole() throws {
        let view = try Self.viewSeen(asOtherUser: true)
        #expect(view.seen == view.expected)
    }

    @Test("system calls no plug-in needs fail, each with the host still serving")
    func callsNoPluginNeeds() throws {
        let session = try Session()
        for name in ["keyctl", "add_key", "name_to_handle_at", "quotactl", "acct", "syslog", "fanotify_init",
                     "userfaultfd", "perf_event_open", "chroot", "past-last", "memfd_create", "openat2"] {
            let record = try session.contain("syscall?name=\(name)")
            // Refused quietly (ENOSYS, or an errno) or as a violation that
            // ends the worker: never done.
            #expect(record.errorCode == "Denied" || record.errorCode == "SandboxViolation", "\(name): \(record)")
            #expect(record.params["result"] == nil, "\(name) went through: \(record)")
            try session.expectHostAlive()
        }
        session.finish()
    }

    @Test("a granted path with a symlink planted on it is refused, never followed out of the view",
          arguments: [false, true])
    func symlinkInAGrant(processes: Bool) throws {
        let outside = try Scratch()
        #expect(chmod(outside.path, 0o777) == 0)
        // It may write the folder, and read "escape/etc" there: once the
        // plug-in makes "escape" a link to the root, that would be the
        // host's /etc (the attack pass bound the host's whole root so).
        let fixture = try Self.fixture(capabilities: """
            \(processes ? "processes = 2\n" : "")[files]
            write = ["\(outside.path)"]
            read = ["\(outside.path)/escape/etc"]
            """)
        let lines = ["contain://x-callback-url/plant?dir=\(percentEncoded(outside.path))"]
        let first = try fixture.run(["--output", "jsonl"], lines: lines)
        #expect(try first.lines.map(Record.init(jsonLine:)).first?.params["result"] == "done", "\(first.stdout) \(first.stderr)")
        // The next worker's view would bind what the link names (the
        // host's root): it is refused, and nothing outside is reached.
        let second = try fixture.run(["--output", "jsonl"], lines: [
            "contain://x-callback-url/stat?path=%2Fetc%2Fpasswd", "calc://x-callback-url/add?lhs=1&rhs=2",
        ])
        let records = try second.lines.map(Record.init(jsonLine:))
        #expect(!records.contains { $0.input?.hasPrefix("contain://") == true && $0.params["result"] == "done" }, "\(second.stdout)")
        #expect((second.stdout + second.stderr).contains("a granted path runs through a symlink"), "\(second.stdout) \(second.stderr)")
        #expect(records.contains { $0.params["result"] == "3" })
    }

    @Test("a grant above the template's folders, or of a symlink, gets a view built whole, and leaves the template as it was")
    func grantsTheTemplateCannotServe() throws {
        let outside = try Scratch()
        let link = outside.file("link")
        #expect(symlink("/root", link) == 0)
        // /dev above the template's devices: bound over them (no-dev) it
        // would hide them; a symlink would be made again in the template's
        // root, for every later worker to find.
        let fixture = try Self.fixture(capabilities: """
            [files]
            read = ["/dev", "\(link)"]
            """)
        let paths = ["/dev/null", "/dev/urandom", link, "/etc/passwd"].joined(separator: ",")
        let result = try fixture.run(["--output", "jsonl"], lines: [
            "contain://x-callback-url/sees?paths=\(percentEncoded(paths))", "calc://x-callback-url/add?lhs=1&rhs=2",
        ])
        let records = try result.lines.map(Record.init(jsonLine:))
        // The devices still work, the link is there, what it names is not.
        // (Records come as requests end, not in the order they were read.)
        let seen = records.first { $0.input?.hasPrefix("contain://") == true }
        #expect(seen?.params["seen"] == "ww--", "\(result.stdout) \(result.stderr)")
        #expect(records.contains { $0.params["result"] == "3" }, "\(result.stdout) \(result.stderr)")
    }

    @Test("a plug-in allowed the fewest descriptors still gets its whole view")
    func fewestDescriptors() throws {
        let fixture = try Self.fixture(capabilities: "open_files = 16\n")
        let run = try fixture.run(["--output", "jsonl"], lines: ["contain://x-callback-url/own"])
        let record = try #require(try run.lines.map(Record.init(jsonLine:)).first, "\(run.stderr)")
        #expect(record.params["result"] == "done", "\(record) \(run.stderr)")
    }

    @Test("a new user namespace is not a clone away, even with processes")
    func noNamespaceByClone() throws {
        let fixture = try Self.fixture(capabilities: "processes = 2\n")
        let run = try fixture.run(["--output", "jsonl"], lines: ["contain://x-callback-url/syscall?name=clone-newuser"])
        let record = try #require(try run.lines.map(Record.init(jsonLine:)).first, "\(run.stderr)")
        #expect(record.params["result"] == nil, "\(record)")
    }

    @Test("check --json lists the system-call groups and the layers a worker gets")
    func checkShowsGroups() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        let result = try xcallback(["check", "--json", fixture.plugins + "/libCalculator.so"], lines: [])
        #expect(result.status == .exited(0), "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let sandbox = try #require(object["sandbox"] as? [String: Any], "\(result.stdout)")
        let groups = try #require(sandbox["groups"] as? [String])
        #expect(groups.contains("@default") && groups.contains("@basic-io"), "\(groups)")
        #expect(!groups.contains("@network") && !groups.contains("@exec"), "granted nothing: \(groups)")
        let layers = try #require(sandbox["layers"] as? [String])
        #expect(layers.contains("seccomp"), "\(layers)")
    }

    @Test("a kernel that lends no mount namespace: no file view, and metadata calls are refused all the same")
    func withoutFileView() throws {
        let fixture = try Self.fixture()
        let outside = fixture.scratch.file("outside.txt")
        try Data("kept\n".utf8).write(to: URL(fileURLWithPath: outside))
        #expect(chmod(outside, 0o600) == 0)
        let before = try FileState(outside)
        let lines = ["chmod", "utime", "setxattr"].map { "contain://x-callback-url/\($0)?path=\(percentEncoded(outside))" }
            + ["contain://x-callback-url/own", "calc://x-callback-url/add?lhs=1&rhs=2"]
        let run = try SandboxTests.withCallsFailing(["unshare"], with: "EPERM",
                                                    fixture.runPrefix + ["--output", "jsonl", "--log-level", "info"],
                                                    lines: lines)
        #expect(run.status == .exited(0), "stderr: \(run.stderr)")
        // Records come as requests end, not in their order.
        let records = Dictionary(try run.lines.map(Record.init(jsonLine:)).map { ($0.input ?? "", $0) }) { first, _ in first }
        try #require(records.count == 5, "\(run.lines)")
        for (line, call) in zip(lines, ["chmod", "utimensat", "setxattr", "chmod"]) {
            let record = try #require(records[line])
            Self.expectFailed(record, call)
            // Even its own files' modes are refused without a view of its own.
            #expect(record.params["errorMessage"]?.contains("Operation not permitted") == true, "\(record)")
        }
        #expect(records[lines[4]]?.params["result"] == "3")
        #expect(try FileState(outside) == before)
        #expect(run.stderr.contains("no file view"), "\(run.stderr)")
    }
}

/// The real uid of process `pid`, from /proc.
func realUID(of pid: pid_t) -> uid_t? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
        return line.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first.flatMap { uid_t($0) }
    }
    return nil
}
