import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A secret another process of the host's user keeps in IPC objects: a
/// 0600 System V shared-memory segment, a 0600 System V message queue and
/// a 0600 POSIX message queue (`/MARKER`), each holding `text`. A small C
/// program (built with `cc`) makes them, keeps them until its input ends,
/// then says whether each message is still queued (`msg:kept mq:kept`, or
/// `taken`) and removes them.
final class SystemVSecret: @unchecked Sendable {
    /// What the text starts with, unique to this run: an attack route finds
    /// the objects by it (whatever other segments the machine has).
    let marker = "xcb-secret-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    var text: String { marker + ":the host user's secret" }
    private let keeper: ChildProcess

    static let source = #"""
        #include <fcntl.h>
        #include <mqueue.h>
        #include <stdio.h>
        #include <string.h>
        #include <sys/msg.h>
        #include <sys/shm.h>
        #include <unistd.h>
        int main(int argc, char **argv) {
            if (argc != 3 || strlen(argv[1]) > 100) return 2;
            struct mq_attr attributes = { .mq_maxmsg = 1, .mq_msgsize = 128 };
            mqd_t posix = mq_open(argv[2], O_RDWR | O_CREAT | O_EXCL | O_NONBLOCK, 0600, &attributes);
            if (posix == (mqd_t)-1 || mq_send(posix, argv[1], strlen(argv[1]) + 1, 0) != 0) { perror("mq"); return 1; }
            int segment = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
            int queue = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
            if (segment < 0 || queue < 0) { perror("shmget/msgget"); return 1; }
            char *memory = shmat(segment, NULL, 0);
            if (memory == (void *)-1) { perror("shmat"); return 1; }
            strcpy(memory, argv[1]);
            shmdt(memory);
            struct { long type; char text[128]; } message = { 1, {0} };
            strcpy(message.text, argv[1]);
            if (msgsnd(queue, &message, strlen(message.text) + 1, 0) != 0) { perror("msgsnd"); return 1; }
            printf("ready\n");
            fflush(stdout);
            char buffer[64];
            while (read(0, buffer, sizeof buffer) > 0) {}
            int kept = msgrcv(queue, &message, sizeof message.text, 0, IPC_NOWAIT) >= 0;
            char text[128];
            int posix_kept = mq_receive(posix, text, sizeof text, NULL) >= 0;
            printf("msg:%s mq:%s\n", kept ? "kept" : "taken", posix_kept ? "kept" : "taken");
            mq_unlink(argv[2]);
            shmctl(segment, IPC_RMID, NULL);
            msgctl(queue, IPC_RMID, NULL);
            return 0;
        }
        """#

    /// Builds the keeper in `directory` (which `asOtherUser` must be able to
    /// read) and starts it, as that user when asked.
    init(in directory: String, asOtherUser: Bool) throws {
        let sourcePath = directory + "/sysv-secret.c"
        let program = directory + "/sysv-secret"
        try Data(Self.source.utf8).write(to: URL(fileURLWithPath: sourcePath))
        let compiler = try ChildProcess(["cc", "-Wall", sourcePath, "-o", program], executable: "/usr/bin/env")
        guard compiler.waitForExit(timeout: 60) == .exited(0) else { throw HarnessError("cc: \(compiler.stderr)") }
        chmod(program, 0o755)
        let text = marker + ":the host user's secret"
        keeper = asOtherUser
            ? try ChildProcess(PeerTrustTests.asOther([program, text, "/" + marker]), executable: "/usr/bin/env", stdin: .pipe)
            : try ChildProcess([text, "/" + marker], executable: program, stdin: .pipe)
        guard keeper.waitForStdoutLines(1, timeout: 10), keeper.stdoutLines.first == "ready" else {
            throw HarnessError("the System V keeper did not start: \(keeper.stderr)")
        }
    }

    /// Ends the keeper (it removes its objects): `msg:kept mq:kept` when both
    /// messages were still queued, `taken` for one someone had taken.
    func finish() -> String? {
        keeper.closeInput()
        _ = keeper.waitForExit(timeout: 10)
        return keeper.stdoutLines.dropFirst().first
    }
}

/// The namespace of kind `kind` (`ipc`, `net`) process `pid` is in.
func namespace(of pid: pid_t, _ kind: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 128)
    let count = readlink("/proc/\(pid)/ns/\(kind)", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
