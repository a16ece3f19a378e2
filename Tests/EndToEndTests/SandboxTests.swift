import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Each worker runs its plug-in in a sandbox: what the plug-in did not
/// declare (and the operator did not narrow away) fails with an errno it can
/// handle, dangerous calls end the worker with `SandboxViolation`, and the
/// host keeps answering (README, "Security model"). Before, one small C
/// plug-in read /etc/shadow, ran programs, killed the host and its sibling
/// workers, wrote a forged record into the host's stdout and left processes
/// behind that held its pipes.
@Suite("Capability sandbox", .ownThreads, .serialized)
struct SandboxTests {
    /// A host with the attacker and the calculator, run as `user` (nil: us).
    final class AttackSession: @unchecked Sendable {
        let fixture: HostFixture
        let host: ChildProcess
        private var answered = 0

        /// `stderrDescriptor`: the host's stderr (a terminal, say), which
        /// the caller keeps; `host.stderr` then stays empty.
        init(capabilities: String? = nil, arguments: [String] = [], asOtherUser: Bool = false,
             environment: [String: String]? = nil, stderrDescriptor: Int32? = nil) throws {
            fixture = try HostFixture(["Calculator"], isolation: "process")
            try TestPlugin.build(AttackPlugin.name, source: AttackPlugin.source, into: fixture.plugins)
            if let capabilities {
                try Data(capabilities.utf8).write(to: URL(fileURLWithPath: fixture.plugins + "/libattacker.caps.toml"))
            }
            // Lots of violations on purpose: none may quarantine the plug-in.
            let command = fixture.runPrefix + ["--output", "jsonl", "--restart-limit", "1000", "--log-level", "info"] + arguments
            if asOtherUser {
                #expect(chmod(fixture.scratch.path, 0o755) == 0)
                host = try ChildProcess(PeerTrustTests.asOther([Products.xcallback] + command),
                                        executable: "/usr/bin/env", stdin: .pipe)
            } else {
                host = try ChildProcess(command, stdin: .pipe, environment: environment, stderrDescriptor: stderrDescriptor)
            }
        }

        func ask(_ line: String, timeout: Double = 10) throws -> Record {
            #expect(host.write(line + "\n"))
            answered += 1
            try #require(host.waitForStdoutLines(answered, timeout: TestTiming.scaled(timeout)),
                         "no record for \(line); stderr: \(host.stderr)")
            return try Record(jsonLine: host.stdoutLines[answered - 1])
        }

        /// Attacks that aim at the host aim at `host` (by default the host).
        func attack(_ route: String, host target: pid_t? = nil, timeout: Double = 10) throws -> Record {
            let separator = route.contains("?") ? "&" : "?"
            return try ask("attack://x-callback-url/\(route)\(separator)host=\(target ?? host.pid)", timeout: timeout)
        }

        /// The calculator still answers: the host and its other workers live.
        func expectHostAlive(sourceLocation: SourceLocation = #_sourceLocation) throws {
            let record = try ask("calc://x-callback-url/add?lhs=2&rhs=3")
            #expect(record.params["result"] == "5", "\(record)", sourceLocation: sourceLocation)
        }

        /// Ends input: the host exits 0, every record is one we asked for,
        /// and nothing it or its workers started is left.
        func finish(alsoGone extra: [pid_t] = []) throws {
            let workers = hostProcesses(of: host.pid)
            host.closeInput()
            #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
            #expect(host.stdoutLines.count == answered, "records no request asked for: \(host.stdoutLines)")
            #expect(!host.stdout.contains("forged"), "a forged record reached stdout")
            for pid in workers + extra {
                #expect(waitUntilGone(pid, timeout: TestTiming.scaled(5)), "process \(pid) outlived the host")
            }
        }
    }

    static func expectDenied(_ record: Record, _ mention: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(record.errorCode == "Denied", "\(record)", sourceLocation: sourceLocation)
        #expect(record.params["errorMessage"]?.contains(mention) == true, "\(record)", sourceLocation: sourceLocation)
    }

    static func expectViolation(_ record: Record, call: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(record.errorCode == "SandboxViolation", "\(record)", sourceLocation: sourceLocation)
        #expect(record.errorDomain == "xcallback", sourceLocation: sourceLocation)
        #expect(record.params["errorMessage"]?.contains("forbidden system call (\(call))") == true, "\(record)",
                sourceLocation: sourceLocation)
    }

    /// A listening TCP socket on a free loopback port.
    static func listener() throws -> (descriptor: Int32, port: UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                guard bind(descriptor, raw, length) == 0, listen(descriptor, 8) == 0,
                      getsockname(descriptor, raw, &length) == 0 else { throw HarnessError("listener: \(errno)") }
            }
        }
        return (descriptor, UInt16(bigEndian: address.sin_port))
    }

    /// Runs every attack of the issue against the default sandbox.
    static func runDefaultAttacks(asOtherUser: Bool) throws {
        let session = try AttackSession(asOtherUser: asOtherUser)
        let scratch = session.fixture.scratch
        let secret = scratch.file("secret.txt")
        try Data("the host user's secret\n".utf8).write(to: URL(fileURLWithPath: secret))
        chmod(secret, 0o644)
        let (listening, port) = try listener()
        defer { close(listening) }

        // Files: nothing outside its grant exists in its view, and what is
        // bound in for loading is read-only; its scratch folder is its own.
        expectDenied(try session.attack("read?path=/etc/shadow"), "No such file or directory")
        expectDenied(try session.attack("read?path=\(secret)"), "No such file or directory")
        expectDenied(try session.attack("write?path=\(scratch.file("planted"))"), "Read-only file system")
        #expect(access(scratch.file("planted"), F_OK) != 0, "the plug-in wrote outside its scratch folder")
        #expect(try session.attack("write?path=planted").params["result"] == "written")
        #expect(try session.attack("read?path=planted").params["result"] == "planted\n")

        // Network, programs, processes: each an errno, each logged once.
        expectDenied(try session.attack("connect?port=\(port)"), "socket: Permission denied")
        expectDenied(try session.attack("connect?port=\(port)"), "socket: Permission denied")
        expectDenied(try session.attack("exec"), "posix_spawn /bin/sh: Resource temporarily unavailable")
        // glibc's system() reports a shell it could not start as exit status 127.
        #expect(try session.attack("system").params["result"] == "status \(127 << 8)")
        expectDenied(try session.attack("forkbomb"), "fork: Resource temporarily unavailable")
        let descriptors = try session.attack("fds")
        #expect((Int(descriptors.params["result"] ?? "") ?? .max) < 128, "\(descriptors)")

        // Reaching into the host: refused; nothing forged reaches its stdout.
        expectDenied(try session.attack("forge"), "open the host's stdout: No such file or directory")
        // A SIGIO the kernel would send the host on the plug-in's behalf is
        // stopped (Landlock's signal scope); the host lives.
        _ = try session.attack("sigio")
        try session.expectHostAlive()

        // Another thread's scheduling (the host's threads, other workers):
        // refused, whatever its id. Before, only the host's pid was.
        #expect(try session.attack("idle-threads").params["result"] == "0")
        // Nor every process of the user (for a root host, root's).
        expectDenied(try session.attack("ioprio-user"), "ioprio_set: Operation not permitted")

        try Self.runAttacksLandlockDoesNotReach(session, asOtherUser: asOtherUser)

        // Dangerous calls end the worker; the host and its other workers live.
        for (route, call) in [("killhost", "kill"), ("tkill", "tkill"), ("tgkill", "tgkill"), ("killsiblings", "kill"), ("ptrace", "ptrace"),
                              ("vmwrite", "process_vm_writev"), ("mount", "mount"), ("bpf", "bpf"),
                              ("prlimit", "prlimit64"), ("idle-host", "sched_setscheduler")] {
            expectViolation(try session.attack(route), call: call)
            try session.expectHostAlive()
        }
        // The zygote the workers are forked from is guarded as the host is.
        for zygote in hostProcesses(of: session.host.pid) where isZygote(zygote) {
            for (route, call) in [("idle-host", "sched_setscheduler"), ("killhost", "kill"), ("tkill", "tkill"),
                                  ("prlimit", "prlimit64")] {
                expectViolation(try session.attack(route, host: zygote), call: call)
                try session.expectHostAlive()
            }
        }
        try session.finish()
        let stderr = session.host.stderr
        #expect(stderr.components(separatedBy: "tried to open a socket").count == 2,
                "a denied call is logged once per plug-in: \(stderr)")
        #expect(stderr.contains("tried to start a process"), "\(stderr)")
        #expect(stderr.components(separatedBy: "tried System V IPC").count == 2, "logged once: \(stderr)")
        #expect(stderr.components(separatedBy: "tried to reach a socket address").count == 2, "logged once: \(stderr)")
        #expect(!looksLikeACrash(stderr.replacingOccurrences(of: "SIGABRT", with: "")), "\(stderr)")
    }

    /// What a red-team pass did where Landlock does not reach (issue 27):
    /// another process's System V IPC, Unix datagrams to a path, and the
    /// namespaces a worker shares with the host.
    static func runAttacksLandlockDoesNotReach(_ session: AttackSession, asOtherUser: Bool) throws {
        let scratch = session.fixture.scratch
        // A 0600 segment and queue of the host's user: not found, not read, not taken.
        let secret = try SystemVSecret(in: scratch.path, asOtherUser: asOtherUser)
        expectDenied(try session.attack("shm?marker=\(secret.marker)"), "shmctl: Permission denied")
        expectDenied(try session.attack("msg?marker=\(secret.marker)"), "msgctl: Permission denied")
        expectDenied(try session.attack("mq?marker=\(secret.marker)"), "mq_open: Permission denied")
        #expect(secret.finish() == "msg:kept mq:kept", "the worker took another process's queued message")

        // A Unix datagram socket anyone may write to (as /dev/log is): no
        // datagram from a worker without 'network', whichever way it tries.
        let path = scratch.file("log.sock")
        let log = try unixSocket(type: Int32(SOCK_DGRAM.rawValue), boundTo: path, listening: false)
        defer { close(log) }
        #expect(chmod(path, 0o777) == 0)
        expectDenied(try session.attack("unixdgram?path=\(path)"), "socketpair: Permission denied")
        expectDenied(try session.attack("unixdgram?path=\(path)&type=raw"), "socketpair: Permission denied")
        expectDenied(try session.attack("unixsendto?path=\(path)"), "sendto: Permission denied")
        expectDenied(try session.attack("unixconnect?path=\(path)"), "connect: Permission denied")
        var byte: UInt8 = 0
        #expect(recv(log, &byte, 1, Int32(MSG_DONTWAIT)) < 0, "a datagram from the worker reached the socket")
        try session.expectHostAlive()

        // Namespaces of its own where the kernel lends them (the host says
        // which layers its workers get).
        #expect(session.host.waitForStderr(containing: "workers' sandbox: ", timeout: 5), "\(session.host.stderr)")
        let layers = session.host.stderr.split(separator: "\n").first { $0.contains("workers' sandbox: ") } ?? ""
        let ipc = try session.attack("ns?kind=ipc").params["result"]
        let network = try session.attack("ns?kind=net").params["result"]
        #expect(ipc != nil && network != nil)
        if layers.contains("ipc namespace") && layers.contains("network namespace") {
            #expect(ipc != namespace(of: session.host.pid, "ipc"), "the worker shares the host's IPC namespace")
            #expect(network != namespace(of: session.host.pid, "net"), "the worker shares the host's network namespace")
        } else {
            #expect(layers.contains("no namespaces"), "\(layers)")
        }
    }

    @Test("the default sandbox: every attack is an errno or a SandboxViolation, and the host keeps answering",
          .scaledTimeLimit(minutes: 2))
    func defaultSandboxContainsEachAttack() throws {
        try Self.runDefaultAttacks(asOtherUser: false)
    }

    @Test("the same attacks, with the host run by an unprivileged user",
          .requires(.otherUser),
          .scaledTimeLimit(minutes: 2))
    func defaultSandboxAsAnotherUser() throws {
        try Self.runDefaultAttacks(asOtherUser: true)
    }

    @Test("another process of the host's user cannot write into the host's stdout or read its environment",
          .requires(.otherUser),
          .scaledTimeLimit(minutes: 1))
    func hostIsNotDumpable() throws {
        let session = try AttackSession(asOtherUser: true)
        try session.expectHostAlive()
        let pid = session.host.pid
        let intruder = try ChildProcess(PeerTrustTests.asOther([
            "/bin/sh", "-c", "echo 'success?forged=record' > /proc/\(pid)/fd/1; cat /proc/\(pid)/environ",
        ]), executable: "/usr/bin/env")
        #expect(intruder.waitForExit(timeout: 10) != .exited(0))
        #expect(intruder.stderr.contains("Permission denied"), "\(intruder.stderr)")
        #expect(intruder.stdout.isEmpty, "read the host's environment: \(intruder.stdout)")
        try session.expectHostAlive()
        try session.finish()
    }

    static func grants(readable: String, writable: String, memory: Int = 4096, processes: Int = 8) -> String {
        """
        network = true
        exec = true
        processes = \(processes)
        open_files = 1024
        memory = \(memory)
        [files]
        read = ["\(readable)"]
        write = ["\(writable)"]
        """
    }

    @Test("granting a capability makes the same route succeed; what a plug-in starts dies with the host",
          .scaledTimeLimit(minutes: 2), arguments: [false, true])
    func grantedCapabilities(asOtherUser: Bool) throws {
        // As an unprivileged user, the worker's IPC namespace comes with a
        // user namespace: it must keep the files and processes it was granted.
        if asOtherUser { try Requirement.otherUser.cancelIfUnmet() }
        let scratch = try Scratch()
        let readable = scratch.file("shared")
        let writable = scratch.file("output")
        #expect(mkdir(readable, 0o755) == 0 && mkdir(writable, 0o755) == 0)
        // A root host's workers run as another user too (nobody): the
        // folder granted for writing must be theirs to write.
        #expect(chmod(scratch.path, 0o755) == 0 && chmod(writable, 0o777) == 0)
        try Data("granted\n".utf8).write(to: URL(fileURLWithPath: readable + "/data.txt"))
        // RLIMIT_NPROC counts threads too, and never applies to root: for
        // another user the worker's own threads (the input moves to a new
        // one whenever a request blocks, as exec's wait does) come out of
        // the grant, so that run grants more room.
        let processes = asOtherUser ? 64 : 8
        let session = try AttackSession(capabilities: Self.grants(readable: readable, writable: writable, processes: processes),
                                        asOtherUser: asOtherUser)
        let (listening, port) = try Self.listener()
        defer { close(listening) }

        #expect(try session.attack("read?path=\(readable)/data.txt").params["result"] == "granted\n")
        #expect(try session.attack("write?path=\(writable)/made").params["result"] == "written")
        #expect(access(writable + "/made", F_OK) == 0)
        #expect(try session.attack("connect?port=\(port)").params["result"] == "connected")
        #expect(try session.attack("exec").params["result"] == "status 7")
        let system = try session.attack("system")
        #expect(system.params["result"] == "status 0", "\(system) \(session.host.stderr)")
        let descriptors = try session.attack("fds")
        #expect((Int(descriptors.params["result"] ?? "") ?? 0) > 128, "\(descriptors)")
        // Still refused: what no capability grants.
        Self.expectDenied(try session.attack("read?path=/etc/shadow"), "No such file or directory")
        Self.expectViolation(try session.attack("killhost"), call: "kill")
        // The rest of the signal family is ruled like kill: a child may
        // raise a signal on itself, the host stays off limits by process or
        // by thread id.
        let raised = try session.attack("childraise")
        #expect(raised.params["result"] == "signal \(SIGUSR1)", "\(raised)")
        Self.expectViolation(try session.attack("tgkill"), call: "tgkill")
        Self.expectViolation(try session.attack("tkill"), call: "tkill")
        // With processes granted, signals to its own descendants pass; the
        // host's group, and the zygote's, are still a violation.
        Self.expectViolation(try session.attack("killgroup"), call: "kill")
        for zygote in hostProcesses(of: session.host.pid) where isZygote(zygote) {
            Self.expectViolation(try session.attack("killgroup", host: zygote), call: "kill")
            Self.expectViolation(try session.attack("killhost", host: zygote), call: "kill")
        }

        // Children that try to leave the worker's process group cannot.
        let lingering = try session.attack("linger?count=3")
        let children = (lingering.params["result"] ?? "").split(separator: ",").map { $0.split(separator: ":") }
        #expect(children.count == 3, "\(lingering)")
        #expect(children.allSatisfy { $0.last == "n" }, "setsid succeeded: \(lingering)")
        let pids = children.compactMap { $0.first.flatMap { pid_t($0) } }
        #expect(pids.allSatisfy { kill($0, 0) == 0 }, "the children should be alive while the host runs")
        try session.finish(alsoGone: pids)

        let listing = try xcallback(["plugins", "--plugins", session.fixture.plugins])
        #expect(listing.lines.contains { $0.contains("attacker") && $0.contains("sandbox: network, exec, read \(readable), write \(writable)") && $0.contains("\(processes) processes") },
                "\(listing.stdout)")
    }

    @Test("with ipc and network granted, a worker reaches System V objects and Unix sockets, in the host's namespaces",
          .scaledTimeLimit(minutes: 1))
    func grantedIPCAndNetwork() throws {
        // A root host's workers run as nobody, so the objects must be
        // nobody's: a checkout nobody cannot reach (`mktemp -d`) leaves
        // no one to make them.
        if geteuid() == 0 { try Requirement.otherUser.cancelIfUnmet() }
        // The socket's folder is granted: in a worker's file view nothing
        // else exists.
        let sockets = try Scratch()
        #expect(chmod(sockets.path, 0o755) == 0)
        let session = try AttackSession(capabilities: "ipc = true\nnetwork = true\n[files]\nread = [\"\(sockets.path)\"]\n")
        // A root host's workers run as nobody: the objects are nobody's then.
        #expect(chmod(session.fixture.scratch.path, 0o755) == 0)
        let secret = try SystemVSecret(in: session.fixture.scratch.path, asOtherUser: geteuid() == 0)
        #expect(try session.attack("shm?marker=\(secret.marker)").params["result"] == secret.text)
        #expect(try session.attack("msg?marker=\(secret.marker)").params["result"] == secret.text)
        // A POSIX message queue is a file on the mqueue mount to Landlock,
        // outside every grant: still refused.
        Self.expectDenied(try session.attack("mq?marker=\(secret.marker)"), "mq_open: Permission denied")
        #expect(secret.finish() == "msg:taken mq:kept")
        let path = sockets.file("log.sock")
        let log = try unixSocket(type: Int32(SOCK_DGRAM.rawValue), boundTo: path, listening: false)
        defer { close(log) }
        #expect(chmod(path, 0o777) == 0)
        #expect(try session.attack("unixdgram?path=\(path)").params["result"] == "sent 2")
        var buffer = [UInt8](repeating: 0, count: 256)
        for _ in 0..<2 {
            #expect(recv(log, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0, "a datagram is missing")
        }
        #expect(try session.attack("ns?kind=ipc").params["result"] == namespace(of: session.host.pid, "ipc"))
        #expect(try session.attack("ns?kind=net").params["result"] == namespace(of: session.host.pid, "net"))
        try session.finish()
        #expect(!session.host.stderr.contains("tried System V IPC"), "\(session.host.stderr)")

        let listing = try xcallback(["plugins", "--json", "--plugins", session.fixture.plugins])
        let attacker = listing.lines.first { $0.contains("\"name\":\"attacker\"") } ?? ""
        #expect(attacker.contains("\"grants\":{\"network\":true,\"exec\":false,\"ipc\":true,"), "\(listing.stdout)")
        #expect(attacker.contains("\"layers\":[\"landlock") && !attacker.contains("namespace"), "\(listing.stdout)")
    }

    @Test("a worker cannot take the host's terminal: tcsetpgrp, TCXONC, TCFLSH and TIOCSCTTY fail with ENOTTY",
          .scaledTimeLimit(minutes: 1))
    func terminalStaysWithTheHost() throws {
        let (master, terminal) = try PseudoTerminal.open()
        let session: AttackSession
        do {
            defer { close(terminal) }
            session = try AttackSession(stderrDescriptor: terminal)
        }
        // Whatever the host writes to its terminal is read (and dropped)
        // until it exits, so its writes never wait.
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while read(master, &chunk, chunk.count) > 0 {}
            close(master)
        }
        // Descriptor 2 is the terminal here (unless workers get stderr of
        // their own); without the filter, TCXONC would stop its output and
        // the host would block at its next line there.
        let answer = try session.attack("tty?fd=2")
        let result = answer.params["result"] ?? ""
        #expect(result.hasPrefix("pgrp:\(ENOTTY) xonc:\(ENOTTY) flush:\(ENOTTY) ctty:\(ENOTTY) tty:"), "\(answer)")
        #expect(!result.hasSuffix(" tty:0"), "the worker opened /dev/tty: \(answer)")
        try session.expectHostAlive()
        try session.finish()
    }

    @Test("a worker sees the host's locale and PATH, not its secrets, unless it declares them",
          .scaledTimeLimit(minutes: 1))
    func environmentStaysWithTheHost() throws {
        var environment = ProcessInfo.processInfo.environment.filter { $0.key != "XCALLBACK_PLUGIN_PATH" }
        environment["DATABASE_PASSWORD"] = "hunter2"
        environment["WEATHER_API_KEY"] = "k-123"
        environment["LC_TIME"] = "C"
        let session = try AttackSession(capabilities: "environment = [\"WEATHER_API_KEY\"]\n",
                                        environment: environment)
        #expect(try session.attack("env?name=DATABASE_PASSWORD").errorCode == "Unset")
        // Nor anywhere in its memory (its environment block, stack or heap, and
        // what it was forked from); a declared one is, which shows the search
        // finds what is there.
        #expect(try session.attack("memory?reversed=2retnuh").params["result"] == "absent")
        #expect(try session.attack("memory?reversed=321-k").params["result"] == "found")
        #expect(try session.attack("env?name=WEATHER_API_KEY").params["result"] == "k-123")
        #expect(try session.attack("env?name=LC_TIME").params["result"] == "C")
        #expect(try session.attack("env?name=PATH").params["result"] == environment["PATH"])

        // Once the grant is gone, the next worker (forked from the same
        // zygote after this one ends) has the variable nowhere: what one
        // worker was given never passes through the zygote to another.
        #expect(hostProcesses(of: session.host.pid).contains(where: isZygote), "workers are not forked from a zygote")
        try Data().write(to: URL(fileURLWithPath: session.fixture.plugins + "/libattacker.caps.toml"))
        Self.expectViolation(try session.attack("killhost"), call: "kill")
        #expect(try session.attack("env?name=WEATHER_API_KEY").errorCode == "Unset")
        #expect(try session.attack("memory?reversed=321-k").params["result"] == "absent")
        try session.finish()
    }

    @Test("an environment larger than a socket's buffer reaches a forked worker whole",
          .scaledTimeLimit(minutes: 1))
    func largeEnvironment() throws {
        var environment = ProcessInfo.processInfo.environment.filter { $0.key != "XCALLBACK_PLUGIN_PATH" }
        let large = String(repeating: "0123456789", count: 10_000)
        for index in 1...4 { environment["LARGE_\(index)"] = large }
        let session = try AttackSession(arguments: ["--sandbox", "off"], environment: environment)
        let answer = try session.attack("env?name=LARGE_4")
        #expect(answer.params["result"] == large, "\(answer.params["result"]?.count ?? -1) bytes")
        try session.finish()
    }

    @Test("processes a plug-in started die even when its host is killed with SIGKILL",
          .scaledTimeLimit(minutes: 1))
    func hostKilledTakesGrandchildren() throws {
        let scratch = try Scratch()
        let session = try AttackSession(capabilities: Self.grants(readable: scratch.path, writable: scratch.path))
        let lingering = try session.attack("linger?count=3")
        let pids = (lingering.params["result"] ?? "").split(separator: ",")
            .compactMap { $0.split(separator: ":").first.flatMap { pid_t($0) } }
        #expect(pids.count == 3, "\(lingering)")
        let workers = hostProcesses(of: session.host.pid)
        session.host.send(signal: SIGKILL)
        _ = session.host.waitForExit(timeout: 10)
        for pid in workers + pids {
            #expect(waitUntilGone(pid, timeout: TestTiming.scaled(5)), "process \(pid) outlived the killed host")
        }
    }

    @Test("the operator's --sandbox-config narrows what a plug-in declares, per plug-in file",
          .scaledTimeLimit(minutes: 1))
    func operatorNarrows() throws {
        let scratch = try Scratch()
        let config = scratch.file("sandbox.toml")
        try Data("""
            [all]
            open_files = 64
            [plugin.libattacker]
            network = false
            exec = false
            """.utf8).write(to: URL(fileURLWithPath: config))
        let session = try AttackSession(capabilities: Self.grants(readable: scratch.path, writable: scratch.path),
                                        arguments: ["--sandbox-config", config])
        let (listening, port) = try Self.listener()
        defer { close(listening) }
        Self.expectDenied(try session.attack("connect?port=\(port)"), "socket: Permission denied")
        Self.expectDenied(try session.attack("exec"), "Permission denied")
        let descriptors = try session.attack("fds")
        #expect((Int(descriptors.params["result"] ?? "") ?? .max) < 64, "\(descriptors)")
        try session.finish()

        let check = try xcallback(["check", "--sandbox-config", config, session.fixture.plugins + "/libattacker.so"])
        #expect(check.lines.first?.contains("sandbox: read \(scratch.path), write \(scratch.path), memory 4096 MiB, 64 files, 8 processes") == true,
                "\(check.stdout) \(check.stderr)")
        let broken = try xcallback(["run", "--sandbox-config", config + ".missing"], lines: [])
        #expect(broken.status != .exited(0))
        #expect(broken.stderr.contains("--sandbox-config: \(config).missing: no such file"), "\(broken.stderr)")
    }

    @Test("a plug-in past its memory ceiling is MemoryLimit, not PluginCrashed", .scaledTimeLimit(minutes: 1))
    func memoryCeiling() throws {
        let session = try AttackSession(capabilities: "memory = 64\n")
        let record = try session.attack("alloc?mib=256", timeout: 20)
        #expect(record.errorCode == "MemoryLimit", "\(record)")
        #expect(record.params["errorMessage"]?.contains("memory ceiling of 64 MiB") == true, "\(record)")
        #expect(try session.attack("alloc?mib=16").params["result"] == "allocated")
        // Shared memory is not data; the address-space ceiling bounds it.
        Self.expectDenied(try session.attack("sharedalloc?mib=4096"), "mmap: Cannot allocate memory")
        try session.expectHostAlive()
        try session.finish()
    }

    @Test("a relative plug-in folder and a manifest naming its library relative to itself still load")
    func relativePaths() throws {
        let scratch = try Scratch()
        let plugins = scratch.file("plugins")
        #expect(mkdir(plugins, 0o755) == 0)
        try TestPlugin.build("Answer", source: """
            int answer(int x) { return x + 1; }
            """, into: plugins)
        try Data(Self.answerManifest.utf8).write(to: URL(fileURLWithPath: plugins + "/answer.xcallback.toml"))
        let child = try ChildProcess(["/bin/sh", "-c", "cd \(scratch.path) && exec \(Products.xcallback) run --plugins plugins"],
                                     executable: "/usr/bin/env", stdin: .bytes(Array("answer://x-callback-url/answer?x=41\n".utf8)))
        #expect(child.waitForExit(timeout: 20) == .exited(0), "\(child.stderr)")
        #expect(child.stdoutLines == ["success?result=42"], "\(child.stdout) \(child.stderr)")
    }

    /// A manifest binding `int answer(int x)` from `./libAnswer.so`.
    static let answerManifest = """
            name = "answer"
            version = "1.0.0"
            library = "./libAnswer.so"
            scheme = "answer"
            [[function]]
            declaration = "int answer(int x)"
            """

    /// In its user namespace a worker of an unprivileged host sees files of
    /// ids it does not map (root's, another user's) as the overflow uid,
    /// which is nobody's: a manifest's library is judged before it enters.
    @Test("a host run by another user: a manifest's library is judged by its real owner",
          .requires(.otherUser),
          .scaledTimeLimit(minutes: 1))
    func manifestLibraryOwnerInAUserNamespace() throws {
        let scratch = try Scratch()
        #expect(chmod(scratch.path, 0o755) == 0)
        let plugins = scratch.file("plugins")
        #expect(mkdir(plugins, 0o755) == 0 && chmod(plugins, 0o755) == 0)
        try TestPlugin.build("Answer", source: "int answer(int x) { return x + 1; }\n", into: plugins)
        let manifest = plugins + "/answer.xcallback.toml"
        try Data(Self.answerManifest.utf8).write(to: URL(fileURLWithPath: manifest))
        #expect(chmod(manifest, 0o644) == 0)
        func run() throws -> RunResult {
            try xcallback(PeerTrustTests.asOther([Products.xcallback, "run", "--plugins", plugins]),
                          lines: ["answer://x-callback-url/answer?x=41"], executable: "/usr/bin/env")
        }
        let rootOwned = try run()
        #expect(rootOwned.lines == ["success?result=42"], "\(rootOwned.stderr)")
        #expect(chown(plugins + "/libAnswer.so", 4321, 4321) == 0)
        let foreign = try run()
        #expect(foreign.lines.first?.hasPrefix("error?errorCode=NotFoundAction") == true, "\(foreign.stdout)")
        #expect(foreign.stderr.contains("library './libAnswer.so' refused: file is owned by another user (uid 4321)"),
                "\(foreign.stderr)")
    }

    @Test("a malformed capability file refuses the plug-in, naming the file and the key", .scaledTimeLimit(minutes: 1))
    func malformedDeclaration() throws {
        let session = try AttackSession(capabilities: "netwrok = true\n")
        let record = try session.attack("read")
        #expect(record.errorCode == "NotFoundAction", "\(record)")
        try session.expectHostAlive()
        try session.finish()
        #expect(session.host.stderr.contains("libattacker.caps.toml: unknown key 'netwrok'"), "\(session.host.stderr)")
    }

    @Test("--isolation none cannot sandbox: the host says so for a plug-in that declares capabilities")
    func inProcessWarns() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "none")
        try TestPlugin.build(AttackPlugin.name, source: AttackPlugin.source, into: fixture.plugins)
        try Data("network = true\n".utf8).write(to: URL(fileURLWithPath: fixture.plugins + "/libattacker.caps.toml"))
        let result = try fixture.run(lines: ["calc://x-callback-url/add?lhs=1&rhs=1"])
        #expect(result.status == .exited(0))
        #expect(result.stderr.contains("libattacker.so declares capabilities"), "\(result.stderr)")
        #expect(result.stderr.contains("no sandbox applies"), "\(result.stderr)")
    }

    /// 100,000 requests with one attack in the middle: each gets exactly one
    /// record, the attack `SandboxViolation`, every other one its answer.
    @Test("a flood with a host kill or a sibling kill in it: 100,000 requests, one record each",
          .scaledTimeLimit(minutes: 4), arguments: ["killhost", "killsiblings"])
    func floodWithAKill(route: String) throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        try TestPlugin.build(AttackPlugin.name, source: AttackPlugin.source, into: fixture.plugins)
        let count = 100_000
        let attackAt = 40_000
        let lines = (0..<count).map { index in
            index == attackAt ? "attack://x-callback-url/\(route)?n=\(index)" : "calc://x-callback-url/add?lhs=\(index)&rhs=1"
        }
        let result = try fixture.run(["--output", "jsonl"], lines: lines, timeout: TestTiming.scaled(180))
        #expect(result.status == .exited(0), "stderr: \(result.stderr.suffix(2000))")
        let records = try result.records()
        #expect(records.count == count)
        var seen = Set<String>()
        var failures: [Record] = []
        for record in records {
            let input = record.input ?? ""
            #expect(seen.insert(input).inserted, "two records for \(input)")
            if input.hasPrefix("attack:") {
                Self.expectViolation(record, call: "kill")
            } else if record.outcome != "success" {
                failures.append(record)
            }
        }
        #expect(seen.count == count)
        #expect(failures.isEmpty, "\(failures.count) innocent requests failed, e.g. \(failures.prefix(3))")
    }

    /// Runs `xcallback` under a seccomp filter that makes Landlock's system
    /// calls fail with ENOSYS, as on a kernel built without it.
    static func withoutLandlock(_ arguments: [String], lines: [String]) throws -> RunResult {
        try withCallsFailing(["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"], with: "ENOSYS",
                             arguments, lines: lines)
    }

    /// Runs `xcallback` under a seccomp filter that makes `calls` fail with
    /// `error` (a name from errno.h), in it and in every process it starts.
    static func withCallsFailing(_ calls: [String], with error: String, _ arguments: [String],
                                 lines: [String]) throws -> RunResult {
        let scratch = try Scratch()
        let launcher = try launcher(failing: calls, with: error, in: scratch)
        return try xcallback([Products.xcallback] + arguments, lines: lines, executable: launcher)
    }

    /// A program, built in `scratch`, that runs the program its arguments
    /// name (then theirs) under a seccomp filter making `calls` fail with
    /// `error`, in it and in every process it starts.
    static func launcher(failing calls: [String], with error: String, in scratch: Scratch) throws -> String {
        let source = scratch.file("failing.c")
        let names = calls.map { "\"\($0)\"" }.joined(separator: ", ")
        try Data(#"""
            #include <errno.h>
            #include <seccomp.h>
            #include <stdio.h>
            #include <sys/prctl.h>
            #include <unistd.h>
            int main(int argc, char **argv) {
                scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
                const char *calls[] = {NAMES};
                for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
                    seccomp_rule_add(filter, SCMP_ACT_ERRNO(ERROR), seccomp_syscall_resolve_name(calls[i]), 0);
                prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if (seccomp_load(filter) != 0) { perror("seccomp_load"); return 99; }
                execv(argv[1], argv + 1);
                perror("execv");
                return 98;
            }
            """#.replacingOccurrences(of: "NAMES", with: names).replacingOccurrences(of: "ERROR", with: error).utf8)
            .write(to: URL(fileURLWithPath: source))
        let launcher = scratch.file("failing")
        let compiler = try ChildProcess(["cc", source, "-o", launcher, "-lseccomp"], executable: "/usr/bin/env")
        guard compiler.waitForExit(timeout: 60) == .exited(0) else { throw HarnessError("cc: \(compiler.stderr)") }
        return launcher
    }

    @Test("a kernel that lends no namespaces: workers run without them, and the host and check say so")
    func kernelWithoutNamespaces() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        let run = try Self.withCallsFailing(["unshare"], with: "EPERM", fixture.runPrefix + ["--log-level", "info"],
                                            lines: ["calc://x-callback-url/add?lhs=1&rhs=2"])
        #expect(run.status == .exited(0), "stderr: \(run.stderr)")
        #expect(run.lines == ["success?result=3"])
        #expect(run.stderr.components(separatedBy: "workers' sandbox: landlock").count == 2, "once: \(run.stderr)")
        #expect(run.stderr.contains("no namespaces (the kernel lends none to this user)"), "\(run.stderr)")
        #expect(!run.stderr.contains("this kernel lacks"), "namespaces are not a missing layer: \(run.stderr)")

        let check = try Self.withCallsFailing(["unshare"], with: "EPERM", ["check", fixture.plugins + "/libCalculator.so"],
                                              lines: [])
        #expect(check.status == .exited(0), "\(check.stderr)")
        #expect(check.lines.first?.contains("; layers: landlock") == true, "\(check.stdout)")
        #expect(check.lines.first?.contains("seccomp, no namespaces") == true, "\(check.stdout)")
    }

    @Test("a kernel without Landlock: --sandbox auto warns once and runs; --sandbox strict refuses to start")
    func kernelWithoutLandlock() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        let line = "calc://x-callback-url/add?lhs=1&rhs=2"
        let auto = try Self.withoutLandlock(fixture.runPrefix, lines: [line])
        #expect(auto.status == .exited(0), "stderr: \(auto.stderr)")
        #expect(auto.lines == ["success?result=3"])
        #expect(auto.stderr.components(separatedBy: "this kernel lacks Landlock").count == 2, "\(auto.stderr)")

        let strict = try Self.withoutLandlock(fixture.runPrefix + ["--sandbox", "strict"], lines: [line])
        #expect(strict.status != .exited(0))
        #expect(strict.lines.isEmpty)
        #expect(strict.stderr.contains("--sandbox strict: this kernel lacks Landlock"), "\(strict.stderr)")
    }
}
