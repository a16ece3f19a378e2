import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A secret another process of the host's user keeps in System V IPC: a
/// 0600 shared-memory segment and a 0600 message queue holding one message,
/// both with `text`. A small C program (built with `cc`) makes them, keeps
/// them until its input ends, then says whether the message is still queued
/// (`kept` or `taken`) and removes both.
final class SystemVSecret: @unchecked Sendable {
    /// What the text starts with, unique to this run: an attack route finds
    /// the objects by it (whatever other segments the machine has).
    let marker = "xcb-secret-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    var text: String { marker + ":the host user's secret" }
    private let keeper: ChildProcess

    static let source = #"""
        #include <stdio.h>
        #include <string.h>
        #include <sys/msg.h>
        #include <sys/shm.h>
        #include <unistd.h>
        int main(int argc, char **argv) {
            if (argc != 2 || strlen(argv[1]) > 100) return 2;
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
            printf("%s\n", msgrcv(queue, &message, sizeof message.text, 0, IPC_NOWAIT) >= 0 ? "kept" : "taken");
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
            ? try ChildProcess(PeerTrustTests.asOther([program, text]), executable: "/usr/bin/env", stdin: .pipe)
            : try ChildProcess([text], executable: program, stdin: .pipe)
        guard keeper.waitForStdoutLines(1, timeout: 10), keeper.stdoutLines.first == "ready" else {
            throw HarnessError("the System V keeper did not start: \(keeper.stderr)")
        }
    }

    /// Ends the keeper (it removes its objects): `kept` when the message was
    /// still queued, `taken` when someone had taken it.
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
