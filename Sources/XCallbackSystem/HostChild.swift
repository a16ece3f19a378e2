import XCallbackSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts a process of this program that loads a plug-in or forks the ones
/// that do (a worker, the zygote, the `check` probe), the one way they all
/// start: `/dev/null` on stdin, the pipes it was given on stdout and
/// stderr, only the `placing` descriptors beside them, no signal blocked,
/// SIGPIPE at its default, a session of its own (no controlling terminal),
/// and the environment `passes` lets through.
public enum HostChild {
    /// The child's pid, or the errno `posix_spawn` failed with.
    public static func spawn(_ executable: String, arguments: [String], stdout: Int32, stderr: Int32,
                              placing placements: [ChildDescriptors.Placement],
                              environment passes: (Substring) -> Bool) -> Result<pid_t, SpawnError> {
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let status = ChildDescriptors.withFileActions(stdout: stdout, stderr: stderr, placing: placements) { actions in
            ChildSignals.withSpawnAttributes(resetting: [SIGPIPE], newSession: true) { attributes in
                ChildEnvironment.withEnvironment(passing: passes) { posix_spawn(&pid, executable, &actions, &attributes, argv, $0) }
            }
        }
        return status == 0 ? .success(pid) : .failure(SpawnError(code: status))
    }

    /// The same, with the environment a worker under `sandbox` may see
    /// (everything, without one).
    public static func spawn(_ executable: String, arguments: [String], stdout: Int32, stderr: Int32,
                              placing placements: [ChildDescriptors.Placement],
                              sandbox: SandboxPlan?) -> Result<pid_t, SpawnError> {
        spawn(executable, arguments: arguments, stdout: stdout, stderr: stderr, placing: placements,
              environment: { name in sandbox.map { SandboxEnvironment.passes(name, for: $0.capabilities) } ?? true })
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public var code: Int32
        public init(code: Int32) { self.code = code }
        public var description: String { String(cString: strerror(code)) }
    }
}
