import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Edge cases of line input that the end-to-end tests first found as host
/// bugs; each is now the contract.
@Suite("Line input edge cases", .ownThreads)
struct LineEdgeTests {
    @Test("an over-long comment or blank line is still skipped: no record (SPEC 2: every non-blank, non-comment line)")
    func overlongCommentIsSkipped() throws {
        let host = try HostFixture(["Calculator"])
        var input = Array("# ".utf8) + Array(repeating: UInt8(ascii: "c"), count: 100) + [10]  // comment, 102 bytes
        input += Array(repeating: UInt8(ascii: " "), count: 100) + [10]                        // blank, 100 bytes
        input += Array("calc://x-callback-url/add?lhs=1&rhs=2\n".utf8)
        let result = try host.run(["--max-line-bytes", "64"], input: input)
        #expect(result.status == .exited(0))
        #expect(result.lines == ["success?result=3"])
    }

    @Test("a CRLF line is measured without its CR: the same line fits the limit with LF or CRLF")
    func crlfDoesNotCountTowardsTheLimit() throws {
        let host = try HostFixture(["Calculator"])
        var line = Array("calc://x-callback-url/add?lhs=1&rhs=2&p=".utf8)
        line += Array(repeating: UInt8(ascii: "a"), count: 64 - line.count)  // exactly 64 bytes
        let lf = try host.run(["--max-line-bytes", "64"], input: line + [10])
        #expect(lf.lines == ["success?result=3"])
        let crlf = try host.run(["--max-line-bytes", "64"], input: line + [13, 10])
        #expect(crlf.lines == ["success?result=3"])
    }

    @Test("call refuses a URL holding a newline, as send does (it would be two requests)", .scaledTimeLimit(minutes: 1))
    func callRejectsNewline() throws {
        let host = try HostFixture(["Calculator"])
        let socketPath = host.scratch.file("s")
        let child = try host.start(["--socket", socketPath], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child))
        let result = try xcallback(["call", "--socket", socketPath,
                                    "calc://x-callback-url/add?lhs=1&rhs=1\ncalc://x-callback-url/divide?lhs=1&rhs=0"])
        #expect(result.status != .exited(0))
        #expect(result.stdout.isEmpty)
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
    }

    @Test("SIGTERM while a line is half-written: the fragment is not run as a request", .scaledTimeLimit(minutes: 1))
    func partialLineAtStop() throws {
        let host = try HostFixture(["Calculator"])
        let child = try host.start()
        // One write: a whole line, then the start of `...rhs=100` with no newline yet.
        child.write("calc://x-callback-url/add?lhs=1&rhs=2\ncalc://x-callback-url/multiply?lhs=1000&rhs=1")
        try #require(child.waitForStdoutLines(1, timeout: 10))
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        #expect(child.stdoutLines == ["success?result=3"])
    }
}
