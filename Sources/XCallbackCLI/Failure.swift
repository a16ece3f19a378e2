import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// Ends a command with one line on stderr and a non-zero exit status.
package enum Failure {
    package static func exit(_ message: String, status: Int32 = 1) -> ExitCode {
        let line = Array("xcallback: \(message)\n".utf8)
        _ = write(2, line, line.count)
        return ExitCode(status)
    }

    /// One line on stderr in the same style, for a command that goes on.
    static func note(_ message: String) {
        let line = Array("xcallback: \(message)\n".utf8)
        _ = write(2, line, line.count)
    }
}
