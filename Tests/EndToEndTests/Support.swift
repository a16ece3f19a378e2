import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A scratch directory with copies of the sample plug-ins, and `xcallback
/// run` pointed at it.
///
/// Hosts run with `--isolation none` (plug-ins in-process) unless told
/// otherwise: these tests pin the contract that holds without isolation.
final class HostFixture: @unchecked Sendable {
    let scratch: Scratch
    let plugins: String
    let isolation: String

    init(_ names: [String] = Products.pluginNames, isolation: String = "none") throws {
        scratch = try Scratch()
        plugins = try scratch.pluginDirectory(names)
        self.isolation = isolation
    }

    /// `run --plugins DIR --isolation MODE`.
    var runPrefix: [String] { ["run", "--plugins", plugins, "--isolation", isolation] }

    /// `xcallback run --plugins DIR ARGUMENTS` on these lines, to the end.
    func run(_ arguments: [String] = [], lines: [String], timeout: Double = 20,
             sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
        try xcallback(runPrefix + arguments, lines: lines, timeout: timeout,
                      sourceLocation: sourceLocation)
    }

    /// `xcallback run --plugins DIR ARGUMENTS` on these raw bytes, to the end.
    func run(_ arguments: [String] = [], input: [UInt8], timeout: Double = 20,
             sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
        try xcallback(runPrefix + arguments, input: input, timeout: timeout,
                      sourceLocation: sourceLocation)
    }

    /// Puts `libBogus.so`, a file that is not a plug-in (mode 0755), beside
    /// the good ones; returns its path.
    func addBogusPlugin() throws -> String {
        let bogus = plugins + "/libBogus.so"
        try Data("not an ELF file\n".utf8).write(to: URL(fileURLWithPath: bogus))
        chmod(bogus, 0o755)
        return bogus
    }

    /// A host left running, reading the given stdin.
    func start(_ arguments: [String] = [], stdin: ChildProcess.Input = .pipe,
               closeStdoutAfterLines: Int? = nil) throws -> ChildProcess {
        try ChildProcess(runPrefix + arguments, stdin: stdin,
                         closeStdoutAfterLines: closeStdoutAfterLines)
    }
}

/// Stable field names for the error parameters.
enum ErrorField {
    static let code = "errorCode"
    static let message = "errorMessage"
    static let domain = "errorDomain"
}

/// The `url`-format error line the host writes when no x-error was given.
func errorLine(code: String, message: String, domain: String) -> String {
    "error?errorCode=\(percentEncoded(code))&errorMessage=\(percentEncoded(message))&errorDomain=\(percentEncoded(domain))"
}

/// True when stderr shows the host crashed rather than ended.
func looksLikeACrash(_ stderr: String) -> Bool {
    ["Fatal error", "fatal error", "Segmentation fault", "Illegal instruction", "Aborted", "Trace/breakpoint",
     "Current stack trace", "panic"].contains { stderr.contains($0) }
}
