import CHostSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The descriptors a process the host starts is given, and nothing more:
/// stdin is `/dev/null`, stdout and stderr go where the host says (never to
/// the records), each listed descriptor lands on its number, and every
/// other descriptor is closed.
///
/// `O_CLOEXEC` on the host's own descriptors is not enough: the host may
/// itself have inherited descriptors without it (from a shell, a test
/// runner, a service manager), and a child holding one keeps a pipe or a
/// socket open behind its owner's back. A child sharing the host's stdin
/// would read requests meant for the host.
public enum ChildDescriptors {
    /// One descriptor to hand over: `descriptor` in the host becomes
    /// `number` in the child.
    public struct Placement {
        public var descriptor: Int32
        public var number: Int32

        public init(descriptor: Int32, number: Int32) {
            self.descriptor = descriptor
            self.number = number
        }
    }

    /// Runs `body` with file actions giving the child `/dev/null` on 0,
    /// `stdout` on 1, `stderr` on 2 (host descriptors; the host's stderr by
    /// default) and the `placements` (numbers 3 and up), all else closed.
    public static func withFileActions<R>(stdout: Int32 = 2, stderr: Int32 = 2, placing placements: [Placement] = [],
                                   _ body: (inout posix_spawn_file_actions_t) -> R) -> R {
        // Copies above every number the child uses first, so placing one
        // descriptor can never overwrite another that is still to be placed.
        let sources = [stdout, stderr] + placements.map(\.descriptor)
        let copies = sources.map { fcntl($0, F_DUPFD_CLOEXEC, 64) }
        defer { for copy in copies where copy >= 0 { close(copy) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let numbers: [Int32] = [1, 2] + placements.map(\.number)
        for (copy, number) in zip(copies, numbers) where copy >= 0 {
            posix_spawn_file_actions_adddup2(&actions, copy, number)
        }
        _ = xcallback_spawn_close_from(&actions, (numbers.max() ?? 2) + 1)
        return body(&actions)
    }
}
