import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A FIFO and a socket served by one host, and systemd socket activation
/// (`LISTEN_PID` / `LISTEN_FDS`, descriptor 3).
@Suite("Served inputs: FIFO and socket together, socket activation", .ownThreads)
struct ServedInputsTests {
    // MARK: FIFO and socket together

    @Test("--fifo and --socket together: both answer; FIFO records go to stdout, socket records to their connection",
          .scaledTimeLimit(minutes: 1))
    func fifoAndSocket() throws {
        let host = try HostFixture(["Calculator"])
        let fifo = host.scratch.file("in.fifo")
        let socketPath = host.scratch.file("in.sock")
        let child = try host.start(["--fifo", fifo, "--socket", socketPath], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")
        try #require(waitForSocketListener(socketPath, host: child), "stderr: \(child.stderr)")

        let sent = try xcallback(["send", "--fifo", fifo, "calc://x-callback-url/add?lhs=1&rhs=2"])
        #expect(sent.status == .exited(0), "send: \(sent.stderr)")
        let called = try xcallback(["call", "--socket", socketPath, "calc://x-callback-url/multiply?lhs=6&rhs=7"])
        #expect(called.status == .exited(0), "call: \(called.stderr)")
        #expect(called.lines == ["success?result=42"])
        let exchanged = try exchangeOverSocket(socketPath, lines: ["calc://x-callback-url/subtract?lhs=5&rhs=1", "calc://x-callback-url/nope"])
        #expect(exchanged.count == 2)
        #expect(exchanged.contains("success?result=4"))
        #expect(child.waitForStdoutLines(1), "stdout: \(child.stdout)")

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        #expect(child.stdoutLines == ["success?result=3"], "only the FIFO's record reaches stdout")
        var info = stat()
        #expect(lstat(socketPath, &info) != 0, "the host removes the socket it created")
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO stays")
    }

    @Test("--fifo and --socket: a socket path that cannot be used stops the host before it serves anything")
    func fifoAndBadSocket() throws {
        let host = try HostFixture(["Calculator"])
        let fifo = host.scratch.file("in.fifo")
        let notASocket = host.scratch.file("plain-file")
        try Data("x".utf8).write(to: URL(fileURLWithPath: notASocket))
        let result = try xcallback(host.runPrefix + ["--fifo", fifo, "--socket", notASocket], timeout: 10)
        #expect(result.status == .exited(1), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("\(notASocket) exists and is not a socket"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    // MARK: socket activation

    @Test("socket activation: the inherited socket is served and never removed; LISTEN_* and descriptor 3 are not passed on",
          .scaledTimeLimit(minutes: 1))
    func activated() throws {
        let host = try HostFixture(["Calculator"])
        let socketPath = host.scratch.file("activated.sock")
        let listener = try unixSocket(boundTo: socketPath, listening: true)
        // What an --open command inherits, written to its stdout (the host's stderr).
        let reporter = host.scratch.file("report-open")
        let script = """
            #!/bin/sh
            fd3=closed
            [ -e /proc/$$/fd/3 ] && fd3=open
            echo "opened $1 LISTEN_PID=${LISTEN_PID-unset} LISTEN_FDS=${LISTEN_FDS-unset} fd3=$fd3"
            """
        // Written under another name and renamed: a child a parallel test
        // spawns must not inherit a descriptor open for writing (ETXTBSY).
        try installScript(at: reporter, script)
        let fifo = host.scratch.file("in.fifo")
        let child = try startActivated(host.runPrefix + ["--fifo", fifo, "--open", reporter, "--socket", socketPath],
                                       socket: listener)
        close(listener)  // the host has its own copy
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")

        let called = try xcallback(["call", "--socket", socketPath, "calc://x-callback-url/add?lhs=2&rhs=4.2"])
        #expect(called.status == .exited(0), "call: \(called.stderr); host: \(child.stderr)")
        #expect(called.lines == ["success?result=6.2"])

        let sent = try xcallback(["send", "--fifo", fifo, "calc://x-callback-url/add?lhs=1&rhs=2&x-success=demo%3A%2F%2Fdone"])
        #expect(sent.status == .exited(0), "send: \(sent.stderr)")
        #expect(child.waitForStderr(containing: "opened demo://done?result=3 LISTEN_PID=unset LISTEN_FDS=unset fd3=closed"),
                "stderr: \(child.stderr)")

        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("warning"), "--socket names the same socket: \(child.stderr)")
        var info = stat()
        #expect(lstat(socketPath, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK, "systemd's socket file stays")
    }

    @Test("socket activation: descriptor 3 that is not a listening Unix stream socket → exit 1 and a clear message",
          arguments: [
              ("a character device", "/dev/null"),
              ("not listening", "stream"),
              ("not a stream socket", "datagram"),
          ])
    func notASocket(problem: String, kind: String) throws {
        let host = try HostFixture(["Calculator"])
        let descriptor: Int32
        switch kind {
        case "stream": descriptor = try unixSocket(boundTo: nil, listening: false)
        case "datagram": descriptor = try unixSocket(type: Int32(SOCK_DGRAM.rawValue), boundTo: nil, listening: false)
        default: descriptor = open(kind, O_RDONLY | O_CLOEXEC)
        }
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let child = try startActivated(host.runPrefix, socket: descriptor,
                                       stdin: .bytes(Array("calc://x-callback-url/add?lhs=1&rhs=2\n".utf8)))
        #expect(child.waitForExit(timeout: 10) == .exited(1), "stderr: \(child.stderr)")
        #expect(child.stderr.contains("socket activation"), "stderr: \(child.stderr)")
        #expect(child.stderr.contains(problem), "stderr: \(child.stderr)")
        #expect(child.stdout.isEmpty, "nothing was served")
    }

    @Test("socket activation variables meant for another process are ignored")
    func foreignListenPID() throws {
        let host = try HostFixture(["Calculator"])
        var environment = ProcessInfo.processInfo.environment.filter { $0.key != "XCALLBACK_PLUGIN_PATH" }
        environment["LISTEN_PID"] = "1"
        environment["LISTEN_FDS"] = "1"
        let child = try ChildProcess(host.runPrefix, stdin: .bytes(Array("calc://x-callback-url/add?lhs=1&rhs=2\n".utf8)),
                                     environment: environment)
        #expect(child.waitForExit(timeout: 20) == .exited(0), "stderr: \(child.stderr)")
        #expect(child.stdoutLines == ["success?result=3"], "stdin was read as usual")
    }
}

// MARK: - Support

/// Starts `xcallback ARGUMENTS` as systemd would after socket activation:
/// `descriptor` as descriptor 3, `LISTEN_FDS=1`, and `LISTEN_PID` set to the
/// host's own pid (sh sets it to its own, then execs the host in its place).
private func startActivated(_ arguments: [String], socket descriptor: Int32,
                            stdin: ChildProcess.Input = .null) throws -> ChildProcess {
    var environment = ProcessInfo.processInfo.environment.filter { $0.key != "XCALLBACK_PLUGIN_PATH" }
    environment["LISTEN_FDS"] = "1"
    environment["LISTEN_FDNAMES"] = "xcallback.socket"
    return try ChildProcess(["-c", #"export LISTEN_PID=$$; exec "$0" "$@""#, Products.xcallback] + arguments,
                            executable: "/bin/sh", stdin: stdin, environment: environment,
                            inheritedDescriptors: [descriptor])
}
