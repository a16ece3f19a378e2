#if canImport(Glibc)
import Glibc
#endif

/// A program found on `$PATH` (xdg-mime, update-desktop-database), run with
/// this process's stdout, stderr and environment, and waited for.
struct ExternalTool {
    let name: String
    let path: String

    /// The first executable file named `name` in `$PATH`, or nil.
    static func find(_ name: String, environment: [String: String]) -> ExternalTool? {
        let searchPath = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in searchPath.split(separator: ":", omittingEmptySubsequences: false) {
            // An empty entry means the current directory (POSIX).
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + name
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 {
                return ExternalTool(name: name, path: candidate)
            }
        }
        return nil
    }

    /// Runs the tool; throws unless it exits with status 0.
    func run(_ arguments: [String]) throws(ExternalToolError) {
        let argv: [UnsafeMutablePointer<CChar>?] = ([name] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        fflush(nil)  // our printed lines before the tool's
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, nil, nil, argv, environ)
        guard spawned == 0 else {
            throw ExternalToolError(commandLine: commandLine(arguments), reason: "cannot start it: \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { throw ExternalToolError(commandLine: commandLine(arguments), reason: "lost track of it") }
        }
        let signal = status & 0x7F
        if signal != 0 { throw ExternalToolError(commandLine: commandLine(arguments), reason: "killed by signal \(signal)") }
        let exitStatus = (status >> 8) & 0xFF
        if exitStatus != 0 { throw ExternalToolError(commandLine: commandLine(arguments), reason: "exited with status \(exitStatus)") }
    }

    /// For messages: the command as a person would type it.
    func commandLine(_ arguments: [String]) -> String { ([name] + arguments).joined(separator: " ") }
}

/// An external tool that did not succeed.
struct ExternalToolError: Error, CustomStringConvertible {
    let commandLine: String
    let reason: String
    var description: String { "\(commandLine): \(reason)" }
}
