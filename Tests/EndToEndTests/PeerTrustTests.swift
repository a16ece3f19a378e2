import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Only the host's own user (and root) can reach it through a FIFO or a
/// socket, and its clients talk only to such a host (docs/usage.md, "Long-lived
/// hosts"). Before, `run --fifo` read a 0666 FIFO another user owned, and
/// `send` and `call` fell back to paths in /tmp with no owner check.
@Suite("Other users' FIFOs and sockets", .ownThreads, .serialized)
struct PeerTrustTests {
    /// Another user to act as, when the tests run as root: `nobody`.
    static let other: (uid: uid_t, gid: gid_t)? = {
        guard otherMissing == nil, let entry = getpwnam("nobody") else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()

    /// Why no test can act as another user here (nil: one can). Besides
    /// root, that user must reach the built binary: a checkout in a folder
    /// only its owner may enter (`mktemp -d` makes one) keeps it out.
    static let otherMissing: String? = {
        guard geteuid() == 0, getpwnam("nobody") != nil else { return "needs root, to act as another user" }
        var folder = Products.directory
        while !folder.isEmpty {
            var info = stat()
            if stat(folder, &info) == 0, info.st_mode & 0o001 == 0 {
                return "needs the build reachable by other users, and \(folder) is closed to them (chmod o+x it to run these)"
            }
            folder = String(folder[..<(folder.lastIndex(of: "/") ?? folder.startIndex)])
        }
        return nil
    }()

    /// `setpriv` runs a command as `other`.
    static func asOther(_ arguments: [String]) -> [String] {
        guard let other else { return arguments }
        return ["setpriv", "--reuid=\(other.uid)", "--regid=\(other.gid)", "--clear-groups"] + arguments
    }

    @Test("run --fifo refuses a FIFO open to other users")
    func fifoOpenToOthers() throws {
        let fixture = try HostFixture(["Calculator"])
        let fifo = fixture.scratch.file("open.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(chmod(fifo, 0o666) == 0)
        let result = try fixture.run(["--fifo", fifo], lines: [])
        #expect(result.status != .exited(0))
        #expect(result.stderr.contains("refusing FIFO: \(fifo) is open to other users (mode 0666)"), "stderr: \(result.stderr)")
    }

    @Test("run --fifo refuses a FIFO another user owns; send refuses to write to it",
          .requires(.otherUser))
    func fifoOwnedByAnotherUser() throws {
        let other = try #require(Self.other)
        let fixture = try HostFixture(["Calculator"])
        let fifo = fixture.scratch.file("theirs.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(chown(fifo, other.uid, other.gid) == 0)
        let result = try fixture.run(["--fifo", fifo], lines: [])
        #expect(result.status != .exited(0))
        #expect(result.stderr.contains("is owned by another user (uid \(other.uid))"), "stderr: \(result.stderr)")

        // The other user reads his FIFO: `send` must not hand him the request.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        defer { close(reader) }
        let sent = try xcallback(["send", "--fifo", fifo, "calc://x-callback-url/add?lhs=1&rhs=2"])
        #expect(sent.status != .exited(0))
        #expect(sent.stderr.contains("owned by another user"), "stderr: \(sent.stderr)")
        var byte: UInt8 = 0
        #expect(read(reader, &byte, 1) <= 0, "send wrote into another user's FIFO")
    }

    @Test("a socket connection from another user is closed unanswered, and logged",
          .requires(.otherUser))
    func socketPeerFromAnotherUser() throws {
        let fixture = try HostFixture(["Calculator"])
        // A folder the other user can enter, and a socket he may open (as
        // a socket systemd passes with SocketMode=0666 would be).
        #expect(chmod(fixture.scratch.path, 0o755) == 0)
        let path = fixture.scratch.file("host.sock")
        let host = try fixture.start(["--socket", path], stdin: .null)
        try #require(waitForSocketListener(path, host: host), "stderr: \(host.stderr)")
        #expect(chmod(path, 0o666) == 0)
        let call = try ChildProcess(Self.asOther([Products.xcallback, "call", "--socket", path, "calc://x-callback-url/add?lhs=1&rhs=2"]),
                                    executable: "/usr/bin/env")
        #expect(call.waitForExit(timeout: 10) == .exited(3), "call as another user: \(call.stdout) \(call.stderr)")
        #expect(!call.stdout.contains("result"), "another user got an answer: \(call.stdout)")
        #expect(host.waitForStderr(containing: "refused a connection to the socket from uid \(Self.other!.uid)"),
                "stderr: \(host.stderr)")
        // Our own user is still served.
        #expect(try exchangeOverSocket(path, lines: ["calc://x-callback-url/add?lhs=1&rhs=2"]) == ["success?result=3"])
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: 10) == .exited(0))
    }

    @Test("call refuses a socket whose listener runs as another user",
          .requires(.otherUser),
          .requires(.python3))
    func callRefusesAnotherUsersListener() throws {
        let scratch = try Scratch()
        #expect(chmod(scratch.path, 0o777) == 0)
        let path = scratch.file("impostor.sock")
        // The other user's listener answers anything with a forged success.
        let impostor = try ChildProcess(Self.asOther(["/usr/bin/python3", "-c", """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
            print("ready", flush=True)
            c, _ = s.accept(); c.recv(4096); c.sendall(b"success?result=forged\\n"); c.close()
            """, path]), executable: "/usr/bin/env")
        try #require(impostor.waitForStdoutLines(1, timeout: 10), "stderr: \(impostor.stderr)")
        let call = try xcallback(["call", "--socket", path, "calc://x-callback-url/add?lhs=1&rhs=2"])
        #expect(call.status == .exited(3), "call: \(call.stdout) \(call.stderr)")
        #expect(call.stderr.contains("runs as uid \(Self.other!.uid)"), "stderr: \(call.stderr)")
        #expect(!call.stdout.contains("forged"))
        kill(impostor.pid, SIGKILL)
        _ = impostor.waitForExit(timeout: 10)
    }

    @Test("send and call refuse a runtime folder that is not private")
    func runtimeFolderMustBePrivate() throws {
        let scratch = try Scratch()
        let runtime = scratch.file("run")
        #expect(mkdir(runtime, 0o777) == 0)
        #expect(chmod(runtime, 0o777) == 0)
        let environment = ["XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin"]
        for command in [["send", "calc://x-callback-url/add?lhs=1&rhs=2"], ["call", "calc://x-callback-url/add?lhs=1&rhs=2"]] {
            let child = try ChildProcess(command, environment: environment)
            #expect(child.waitForExit(timeout: 10) != .exited(0))
            #expect(child.stderr.contains("\(runtime) is not a private folder"), "\(command[0]): \(child.stderr)")
        }
        #expect(chmod(runtime, 0o700) == 0)
        let send = try ChildProcess(["send", "calc://x-callback-url/add?lhs=1&rhs=2"], environment: environment)
        #expect(send.waitForExit(timeout: 10) != .exited(0))
        #expect(!send.stderr.contains("not a private folder") && send.stderr.contains("xcallback-"),
                "a private folder passes: \(send.stderr)")
    }
}
