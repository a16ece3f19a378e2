import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Host bugs and SPEC deviations found by the end-to-end tests. Each test
/// states the contract; `withKnownIssue` keeps the suite green until the
/// host is fixed, and fails ("known issue was not recorded") once it is, so
/// the wrapper can be removed. Slow or host-killing ones are disabled.
@Suite("Known host issues")
struct KnownIssueTests {
    @Test("an over-long comment or blank line is still skipped: no record (SPEC 2: every non-blank, non-comment line)")
    func overlongCommentIsSkipped() throws {
        let host = try HostFixture(["Calculator"])
        var input = Array("# ".utf8) + Array(repeating: UInt8(ascii: "c"), count: 100) + [10]  // comment, 102 bytes
        input += Array(repeating: UInt8(ascii: " "), count: 100) + [10]                        // blank, 100 bytes
        input += Array("calc://x-callback-url/add?lhs=1&rhs=2\n".utf8)
        let result = try host.run(["--max-line-bytes", "64"], input: input)
        #expect(result.status == .exited(0))
        withKnownIssue("bug: LineReader applies --max-line-bytes before it recognises comments and blank lines, so each gives an InvalidURL record") {
            #expect(result.lines == ["success?result=3"])
        }
    }

    @Test("a CRLF line is measured without its CR: the same line fits the limit with LF or CRLF")
    func crlfDoesNotCountTowardsTheLimit() throws {
        let host = try HostFixture(["Calculator"])
        var line = Array("calc://x-callback-url/add?lhs=1&rhs=2&p=".utf8)
        line += Array(repeating: UInt8(ascii: "a"), count: 64 - line.count)  // exactly 64 bytes
        let lf = try host.run(["--max-line-bytes", "64"], input: line + [10])
        #expect(lf.lines == ["success?result=3"])
        let crlf = try host.run(["--max-line-bytes", "64"], input: line + [13, 10])
        withKnownIssue("bug: the CR of a CRLF terminator counts towards --max-line-bytes; the line is InvalidURL (65 bytes read)") {
            #expect(crlf.lines == ["success?result=3"])
        }
    }

    @Test("call refuses a URL holding a newline, as send does (it would be two requests)", .timeLimit(.minutes(1)))
    func callRejectsNewline() throws {
        let host = try HostFixture(["Calculator"])
        let socketPath = host.scratch.file("s")
        let child = try host.start(["--socket", socketPath], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: child))
        let result = try xcallback(["call", "--socket", socketPath,
                                    "calc://x-callback-url/add?lhs=1&rhs=1\ncalc://x-callback-url/divide?lhs=1&rhs=0"])
        withKnownIssue("bug: call sends both lines, prints the first record only and exits 0; the second request's error is lost") {
            #expect(result.status != .exited(0))
            #expect(result.stdout.isEmpty)
        }
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
    }

    @Test("SIGTERM while a line is half-written: the fragment is not run as a request", .timeLimit(.minutes(1)))
    func partialLineAtStop() throws {
        let host = try HostFixture(["Calculator"])
        let child = try host.start()
        // One write: a whole line, then the start of `...rhs=100` with no newline yet.
        child.write("calc://x-callback-url/add?lhs=1&rhs=2\ncalc://x-callback-url/multiply?lhs=1000&rhs=1")
        try #require(child.waitForStdoutLines(1, timeout: 10))
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        withKnownIssue("bug: on SIGTERM/SIGINT the reader hands its unterminated buffered bytes on as a final line, so a truncated request runs (here multiply?lhs=1000&rhs=1 → success?result=1000)",
                       isIntermittent: true) {
            #expect(child.stdoutLines == ["success?result=3"])
        }
    }
}
