import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The command line's Unix habits (issue 21; clig.dev, jq, rg, fd): a
/// version, FILE arguments, help that documents, one error style with
/// suggestions, Ctrl-C that stops cleanly with 130, a closed stdout that
/// ends quietly, plug-in folders that are skipped or reported as they
/// should be, and an `--open` COMMAND checked at start-up.
@Suite("CLI conventions")
struct CLIConventionTests {
    private static let add = "calc://x-callback-url/add?lhs=1&rhs=1"

    /// Every line of `stderr` is in the one error style.
    private static func isOneStyle(_ stderr: String) -> Bool {
        let lines = ChildProcess.lines(stderr)
        return !lines.isEmpty && lines.allSatisfy { $0.hasPrefix("xcallback: ") }
            && !stderr.contains("Error:") && !stderr.contains("Usage:")
    }

    // MARK: closed stdout

    @Test("a closed stdout ends the host quietly: exit 0, no warning about the line being read",
          .scaledTimeLimit(minutes: 1))
    func closedStdout() throws {
        let host = try HostFixture(["Calculator"])
        // Like `xcallback run | head -n 1` fed by a writer that is mid-line.
        let child = try host.start(closeStdoutAfterLines: 1)
        child.write("\(Self.add)\n")
        try #require(child.waitForStdoutClosed(timeout: 10), "stderr: \(child.stderr)")
        // The next record finds stdout closed while half a line waits.
        child.write("\(Self.add)\ncalc://x-callback-url/add?lhs=")
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("unterminated"), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("warning"), "stderr: \(child.stderr)")
        #expect(!looksLikeACrash(child.stderr), "stderr: \(child.stderr)")
    }
}
