import CSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The kinds of call a worker's sandbox turned away with an errno (not
/// fatal), as its supervisor reports them for the host to log.
public struct DeniedCalls: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let socket = DeniedCalls(rawValue: UInt64(XCALLBACK_DENIED_SOCKET))
    public static let exec = DeniedCalls(rawValue: UInt64(XCALLBACK_DENIED_EXEC))
    public static let fork = DeniedCalls(rawValue: UInt64(XCALLBACK_DENIED_FORK))
    public static let session = DeniedCalls(rawValue: UInt64(XCALLBACK_DENIED_SESSION))
    public static let address = DeniedCalls(rawValue: UInt64(XCALLBACK_DENIED_ADDRESS))
    public static let ipc = DeniedCalls(rawValue: UInt64(XCALLBACK_DENIED_IPC))

    /// Each kind alone, with the sentence the host logs for it.
    public var explained: [(kind: DeniedCalls, text: String)] {
        let all: [(DeniedCalls, String)] = [
            (.socket, "tried to open a socket: denied (EACCES), it has no 'network' capability"),
            (.address, "tried to reach a socket address (connect, sendto): denied (EACCES), it has no 'network' capability"),
            (.ipc, "tried System V IPC or a POSIX message queue: denied (EACCES), it has no 'ipc' capability"),
            (.exec, "tried to start a program: denied (EACCES), it has no 'exec' capability"),
            (.fork, "tried to start a process: denied (EAGAIN), it has no 'processes' capability"),
            (.session, "tried to leave its worker's process group (setsid/setpgid): denied (EPERM)"),
        ]
        return all.filter { contains($0.0) }.map { (kind: $0.0, text: $0.1) }
    }
}

/// System call names, for the message of a `SandboxViolation`.
public enum SystemCallName {
    /// The name of system call `number` on this architecture.
    public static func of(_ number: Int32) -> String {
        guard let name = xcallback_syscall_name(number) else { return "system call \(number)" }
        defer { free(name) }
        return String(cString: name)
    }
}
