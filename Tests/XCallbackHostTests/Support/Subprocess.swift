import CHostSupport
import Testing
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// One file, linked (a symbolic link) into FFITests too: both modules run
// `cc` and small programs this way.

/// Runs a program to its end, collecting stdout and stderr together, within
/// a bound: past it the program (and its process group) is killed and the
/// run throws with what it printed.
///
/// Not Foundation's `Process`: on Linux it learns of a child's exit through
/// a socket pair made without close-on-exec and watched by one shared
/// run-loop thread, which then blocks in `waitpid`; its pipes have no
/// close-on-exec either. A child another thread spawns at the same moment
/// can inherit those ends and hold them open, and `readDataToEndOfFile` and
/// `waitUntilExit` have no bound, so one stuck child hung a whole test run.
/// Here the pipe is close-on-exec, the child gets nothing but its stdout and
/// stderr (`ChildDescriptors`), and every wait has a deadline.
enum Subprocess {
    struct Result {
        var status: Int32
        var output: String
    }

    /// Runs `executable` (a path, or a name looked up on PATH) in
    /// `directory`. `status` is the exit status, or 128 + the signal that
    /// ended it; 127 when the program could not be run.
    static func run(_ executable: String, _ arguments: [String], in directory: String,
                    timeout seconds: Double = 120,
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> Result {
        OwnThread.checkMayBlock("running \(executable)", sourceLocation: sourceLocation)
        var ends: [Int32] = [-1, -1]
        guard xcallback_pipe_cloexec(&ends) == 0 else { throw TestFailure("pipe: \(String(cString: strerror(errno)))") }
        // env changes directory and execs the program in the same process
        // (Swift does not import posix_spawn_file_actions_addchdir_np).
        let command = ["/usr/bin/env", "-C", directory, executable] + arguments
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = ChildDescriptors.withFileActions(stdout: ends[1], stderr: ends[1]) { actions in
            // A group of its own: a timeout kills what the program started too.
            ChildSignals.withSpawnAttributes(resetting: [SIGPIPE]) { attributes in
                posix_spawn(&pid, command[0], &actions, &attributes, argv, environ)
            }
        }
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            throw TestFailure("could not start \(executable): \(String(cString: strerror(spawned)))")
        }
        let deadline = MonotonicClock.now + UInt64(seconds * 1e9)
        let (output, ended) = readToEnd(ends[0], until: deadline)
        close(ends[0])
        // Output that never ended (a process of its group still holds the
        // pipe) is a timeout too, even where the program itself exited.
        let status = waitForExit(pid, until: ended ? deadline : 0)
        let text = String(decoding: output, as: UTF8.self)
        guard let status, ended else {
            throw TestFailure("\(executable) \(arguments.joined(separator: " ")) did not finish within \(Int(seconds)) s "
                + "and was killed; it printed:\n\(text)")
        }
        return Result(status: status, output: text)
    }

    /// What `descriptor` yields until its end or `deadline`, and whether
    /// the end came.
    private static func readToEnd(_ descriptor: Int32, until deadline: UInt64) -> ([UInt8], Bool) {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let now = MonotonicClock.now
            guard now < deadline else { return (output, false) }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min((deadline - now) / 1_000_000 + 1, 1_000)))
            if ready < 0 && errno != EINTR { return (output, true) }
            guard ready > 0 else { continue }
            let count = read(descriptor, &chunk, chunk.count)
            if count > 0 {
                output += chunk[0..<count]
            } else if count == 0 || errno != EINTR {
                return (output, true)
            }
        }
    }

    /// The child's status once it exits; nil when `deadline` passed first,
    /// after killing its group and reaping it. A deadline of 0 kills at once.
    private static func waitForExit(_ pid: pid_t, until deadline: UInt64) -> Int32? {
        var raw: Int32 = 0
        while true {
            let reaped = deadline == 0 ? 0 : waitpid(pid, &raw, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { return -1 }
            if MonotonicClock.now >= deadline {
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
                while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
                return nil
            }
            usleep(2_000)
        }
        // WIFEXITED, WEXITSTATUS and WTERMSIG, which Swift does not import.
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}
