import CHostSupport
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs COMMAND with one URL as its only argument, the way `run --open` and
/// `call --via-open` do: COMMAND is one program (looked up in `PATH`), never
/// split or given to a shell, so no byte of the URL is ever interpreted.
/// Its stdout goes to stderr: it must not mix with outcome records. It
/// starts with no signal blocked and SIGPIPE at its default, whatever the
/// calling thread blocks or ignores (the host takes its signals on one
/// thread and ignores SIGPIPE; a program it opens should not inherit that).
public enum OpenCommand {
    /// Runs `command url` and waits for it. Returns its exit status (a death
    /// by signal N reads as 128 + N, a shell's convention), or why it could
    /// not be started.
    public static func run(_ command: String, url: String) -> Result<Int32, OpenCommandError> {
        launch(command, url: url, watchingExit: false).map { $0.waitForExit() }
    }

    /// Starts `command url` without waiting for it.
    public static func start(_ command: String, url: String) -> Result<LaunchedCommand, OpenCommandError> {
        launch(command, url: url, watchingExit: true)
    }

    /// Why `command` could not be started, or nil: a name with a slash must
    /// be an executable file; a bare name, one in a folder of `PATH` (as
    /// `posix_spawnp` looks it up). For a start-up check: a host whose
    /// `--open` cannot run would fail every record.
    public static func problem(finding command: String) -> String? {
        guard !command.isEmpty else { return "the command is empty" }
        if command.contains("/") {
            return executableProblem(command).map { "cannot run '\(command)': \($0)" }
        }
        // posix_spawnp's search path when PATH is unset (confstr _CS_PATH).
        let path = getenv("PATH").map { String(cString: $0) } ?? "/bin:/usr/bin"
        for folder in path.split(separator: ":", omittingEmptySubsequences: false) {
            if executableProblem((folder.isEmpty ? "." : String(folder)) + "/" + command) == nil { return nil }
        }
        return "'\(command)' was not found: no executable of that name in PATH"
    }

    private static func executableProblem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return String(cString: strerror(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { return "not a regular file" }
        guard access(path, X_OK) == 0 else { return "not executable (\(String(cString: strerror(errno))))" }
        return nil
    }

    private static func launch(_ command: String, url: String, watchingExit: Bool) -> Result<LaunchedCommand, OpenCommandError> {
        var pid = pid_t()
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(command), strdup(url), nil]
        defer { arguments.forEach { free($0) } }
        // stdin is /dev/null: a command that reads it must not take the
        // host's requests.
        let status = ChildDescriptors.withFileActions { actions in
            ChildSignals.withSpawnAttributes(resetting: [SIGPIPE, SIGINT, SIGTERM, SIGHUP]) { attributes in
                posix_spawnp(&pid, command, &actions, &attributes, arguments, environ)
            }
        }
        guard status == 0 else { return .failure(OpenCommandError(message: String(cString: strerror(status)))) }
        return .success(LaunchedCommand(pid: pid, watchingExit: watchingExit))
    }
}

/// A command started by ``OpenCommand/start(_:url:)``, not yet reaped.
public final class LaunchedCommand: Sendable {
    public let pid: pid_t
    /// Becomes readable when the command exits (a pidfd), for poll(2);
    /// nil where the kernel has no pidfds.
    public let exitDescriptor: Int32?

    init(pid: pid_t, watchingExit: Bool) {
        self.pid = pid
        let descriptor = watchingExit ? xcallback_pidfd_open(pid) : -1
        if descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        exitDescriptor = descriptor >= 0 ? descriptor : nil
    }

    deinit {
        if let exitDescriptor { close(exitDescriptor) }
    }

    /// Waits for the command to exit; its status as ``OpenCommand/run(_:url:)`` reports it.
    public func waitForExit() -> Int32 {
        Self.status(WorkerExit.wait(for: pid))
    }

    /// The command's status if it has exited (and reaps it), else nil.
    public func statusIfExited() -> Int32? {
        var raw: Int32 = 0
        while true {
            let reaped = waitpid(pid, &raw, WNOHANG)
            if reaped == pid { return Self.status(WorkerExit(status: raw)) }
            if reaped < 0 && errno == EINTR { continue }
            return nil
        }
    }

    private static func status(_ exit: WorkerExit) -> Int32 {
        exit.signal.map { 128 + $0 } ?? exit.exitCode ?? 0
    }
}

/// Why COMMAND could not be started (not found, not executable…).
public struct OpenCommandError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
