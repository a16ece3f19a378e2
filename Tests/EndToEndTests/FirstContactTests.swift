import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The first minutes of a new user (issue 46): a command that cannot do
/// what it was asked says why and what to do next, and `run` on a terminal
/// says what it waits for.
@Suite("first contact: errors that name the next step", .ownThreads)
struct FirstContactTests {
    static let add = "calc://x-callback-url/add?lhs=1&rhs=2"

    /// A private runtime folder, as `$XDG_RUNTIME_DIR` is.
    static func runtimeFolder(in scratch: Scratch) -> String {
        let runtime = scratch.file("run")
        #expect(mkdir(runtime, 0o700) == 0)
        return runtime
    }

    @Test("send before any host ran: the FIFO is missing, and the message says how to start a host")
    func sendWithoutFIFO() throws {
        let scratch = try Scratch()
        let runtime = Self.runtimeFolder(in: scratch)
        let send = try ChildProcess(["send", Self.add], environment: ["XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin"])
        #expect(send.waitForExit(timeout: 10) == .exited(1))
        let fifo = runtime + "/xcallback-\(getuid()).fifo"
        #expect(send.stderr == "xcallback: no host has made \(fifo) (start one with: xcallback run --fifo \(fifo))\n")
    }

    @Test("top with no host, on a socket path or a port: the message says how to start one")
    func topWithoutHost() throws {
        let scratch = try Scratch()
        let socket = scratch.file("metrics.sock")
        let onPath = try xcallback(["top", "--count", "1", socket])
        #expect(onPath.status == .exited(1))
        #expect(onPath.stderr.hasPrefix("xcallback: cannot connect to \(socket): No such file or directory"), "\(onPath.stderr)")
        #expect(onPath.stderr.contains("no host serves metrics there (start one with: xcallback run --metrics \(socket) --socket PATH"),
                "\(onPath.stderr)")
        // A port nobody listens on: bound, then released.
        let port = try Self.freePort()
        let onPort = try xcallback(["top", "--count", "1", "127.0.0.1:\(port)"])
        #expect(onPort.status == .exited(1))
        #expect(onPort.stderr.contains("Connection refused: no host serves metrics there (start one with: xcallback run --metrics 127.0.0.1:\(port) "),
                "\(onPort.stderr)")
        #expect(!onPort.stderr.contains("\u{1B}["))
    }

    /// A TCP port that was free a moment ago.
    static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw HarnessError("bind: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test("a symlinked runtime folder is refused, and the message says it is a symlink, and to where")
    func symlinkedRuntimeFolder() throws {
        let scratch = try Scratch()
        let real = Self.runtimeFolder(in: scratch)
        let link = scratch.file("link")
        #expect(symlink(real, link) == 0)
        let send = try ChildProcess(["send", Self.add], environment: ["XDG_RUNTIME_DIR": link, "PATH": "/usr/bin:/bin"])
        #expect(send.waitForExit(timeout: 10) == .exited(1))
        #expect(send.stderr.contains("\(link) is not a private folder"), "\(send.stderr)")
        #expect(send.stderr.contains("it is a symlink to \(real), owned by uid \(getuid())"), "\(send.stderr)")
        #expect(!send.stderr.contains("mode 0777"), "a symlink's own mode says nothing: \(send.stderr)")
    }

    @Test("run on a terminal with nothing piped in says what it reads and how to end; on a pipe it says nothing",
          .requires(.script), .scaledTimeLimit(minutes: 1))
    func runOnTerminal() throws {
        let scratch = try Scratch()
        let plugins = try scratch.pluginDirectory(["Calculator"])
        let command = "\(Products.xcallback) run --isolation none --no-summary --plugins \(plugins)"
        let run = try ChildProcess(["-qfec", command, "/dev/null"], executable: TopTests.script, stdin: .pipe)
        try #require(run.waitForStdout(timeout: TestTiming.scaled(10)) { $0.contains("reading request URLs from the terminal") },
                     "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("xcallback: reading request URLs from the terminal, one per line; Ctrl-D ends "
                                    + "(pipe a file in, or serve --fifo or --socket)"), "\(run.stdout)")
        // It reads the terminal, and Ctrl-D ends it.
        #expect(run.write(Self.add + "\n"))
        #expect(run.waitForStdout(timeout: TestTiming.scaled(10)) { $0.contains("success?result=3") }, "\(run.stdout)")
        #expect(run.write("\u{04}"))
        #expect(run.waitForExit(timeout: TestTiming.scaled(10)) == .exited(0), "stdout: \(run.stdout)")
        // Piped in: no hint.
        let piped = try xcallback(["run", "--isolation", "none", "--plugins", plugins], lines: [Self.add])
        #expect(piped.status == .exited(0))
        #expect(!piped.stderr.contains("reading request URLs"), "\(piped.stderr)")
    }
}
