import Foundation
import Testing

/// A worker that is behind is not a worker that hangs. Given a burst of
/// requests its handlers cannot finish before `--timeout`, the host
/// answers the late ones `Timeout` and keeps the worker: those it never
/// began hung nothing, and one begun just before its deadline returns a
/// moment after. Before, each such Timeout called the worker stuck and
/// replaced it, which under overload restarts (and can quarantine) a
/// plug-in that works. And the worker sends the answers it has before it
/// runs the next request once the clock has moved, not when the burst is
/// done: before, it held every answer until it had run the last request,
/// so all of them timed out.
@Suite("A worker that is behind", .ownThreads)
struct BehindWorkerTests {
    static let source = """
        #include "xcallback.h"
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        XCALLBACK_PLUGIN("slow", "1.0.0", "takes 20 ms a request")
        static const xcallback_host_api *host;
        static void work(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)unused;
            usleep(20000);
            host->reply_success(reply, NULL, 0);
        }
        static void nap(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)unused;
            size_t length = 0;
            const char *ms = host->request_parameter(request, "ms", &length);
            usleep(ms ? (useconds_t)atoi(ms) * 1000 : 0);
            host->reply_success(reply, NULL, 0);
        }
        static void answer_first(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)unused;
            size_t length = 0;
            const char *before = host->request_parameter(request, "before", &length);
            usleep(before ? (useconds_t)atoi(before) * 1000 : 0);
            const char *ms = host->request_parameter(request, "ms", &length);
            host->reply_success(reply, NULL, 0);
            usleep(ms ? (useconds_t)atoi(ms) * 1000 : 0);
        }
        static char big_text[4001];
        static void big(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)unused;
            xcallback_param param = { "text", big_text };
            host->reply_success(reply, &param, 1);
        }
        static void hang(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)reply; (void)unused;
            for (;;) pause();
        }
        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            memset(big_text, 'b', sizeof big_text - 1);
            int rc = api->register_action(plugin, "slow", "work", work, NULL);
            rc = rc ? rc : api->register_action(plugin, "slow", "big", big, NULL);
            rc = rc ? rc : api->register_action(plugin, "slow", "hang", hang, NULL);
            rc = rc ? rc : api->register_action(plugin, "slow", "answer-first", answer_first, NULL);
            return rc ? rc : api->register_action(plugin, "slow", "nap", nap, NULL);
        }
        """

    @Test("a burst past --timeout: Timeouts, every request one record, and the worker is never called hung",
          arguments: ["url", "jsonl"])
    func burstPastTimeout(output: String) throws {
        let fixture = try HostFixture([], isolation: "process")
        try TestPlugin.build("slow", source: Self.source, into: fixture.plugins)
        let host = try fixture.start(["--timeout", "0.3", "--output", output])
        // First a worker that runs: a request that waits for one to start
        // never begins at all.
        #expect(host.write("slow://x-callback-url/work?n=warm-up\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(20)), "\(host.stderr)")
        let lines = (0..<60).map { "slow://x-callback-url/work?n=\($0)&x-success=ok:&x-error=err:" }
        #expect(host.write(lines.map { $0 + "\n" }.joined()))
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(60)) == .exited(0), "\(host.stderr)")
        let result = (lines: Array(host.stdoutLines.dropFirst()), stderr: host.stderr)
        #expect(result.lines.count == lines.count, "\(host.stdout)")
        let timeouts = result.lines.filter { $0.contains("Timeout") }.count
        #expect(timeouts > 0 && timeouts < lines.count, "\(result.lines)")
        #expect(!result.stderr.contains("hung past its deadline"), "\(result.stderr)")
        #expect(!result.stderr.contains("restarted plug-in"), "\(result.stderr)")
    }

    @Test("an answer given just before a slow request is not held back until that one ends",
          arguments: ["none", "process"])
    func answerBeforeSlowRequest(isolation: String) throws {
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build("slow", source: Self.source, into: fixture.plugins)
        let host = try fixture.start(["--timeout", "2.5"])
        #expect(host.write("slow://x-callback-url/nap?ms=0\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(20)), "\(host.stderr)")
        // In one read, so one thread takes both in one batch: the first is
        // answered at once, the second sleeps past its deadline. The
        // first's record comes out while the second still sleeps (its
        // thread stalls; the one the input goes to writes it), not when
        // the second ends.
        #expect(host.write("slow://x-callback-url/nap?ms=0&n=1\nslow://x-callback-url/nap?ms=4000&n=2\n"))
        try #require(host.waitForStdoutLines(2, timeout: TestTiming.scaled(20)), "\(host.stdout)")
        #expect(host.stdoutLines.count == 2, "written only when the slow request ended: \(host.stdout)")
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(30)) == .exited(0), "\(host.stderr)")
        let records = Array(host.stdoutLines.dropFirst())
        #expect(records.first == "success", "\(records)")
        #expect(records.last?.hasPrefix("error?errorCode=Timeout") == true, "\(records)")
    }

    @Test("a handler the worker begins only after its request's Timeout, and that never returns, still gets the worker replaced")
    func hangBegunAfterTimeout() throws {
        let fixture = try HostFixture([], isolation: "process")
        try TestPlugin.build("slow", source: Self.source, into: fixture.plugins)
        let host = try fixture.start(["--timeout", "0.02"])
        #expect(host.write("slow://x-callback-url/nap?ms=0\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(20)), "\(host.stderr)")
        // The worker is in the nap when the hang's 20 ms run out, and
        // begins the hang only after (its stall watchdog hands the input
        // on after 50 ms at the soonest): the Timeout finds it not begun.
        // Before, that hang was never looked at again, and the worker kept
        // a thread stuck in it for good (65 of them stopped it altogether).
        #expect(host.write("slow://x-callback-url/nap?ms=200\nslow://x-callback-url/hang\n"))
        #expect(host.waitForStderr(containing: "hung past its deadline", timeout: TestTiming.scaled(20)),
                "\(host.stderr)")
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(30)) == .exited(0), "\(host.stderr)")
        #expect(host.stdoutLines.count == 3, "\(host.stdout)")
    }

    @Test("a handler that answers, then works on past the deadline: its answer, in either isolation",
          arguments: ["none", "process"], ["", "before=300&"])
    func answerThenSlow(isolation: String, before: String) throws {
        let fixture = try HostFixture([], isolation: isolation)
        try TestPlugin.build("slow", source: Self.source, into: fixture.plugins)
        let host = try fixture.start(["--timeout", "1.5"])
        // The answer is given at once; the handler returns 3 s later. A
        // worker's lane held the answer until the handler returned, so the
        // host answered Timeout, where in process the answer was success.
        // With `before`, the answer comes after the call stalled (50 ms).
        #expect(host.write("slow://x-callback-url/answer-first?\(before)ms=3000\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(20)), "\(host.stderr)")
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(30)) == .exited(0), "\(host.stderr)")
        #expect(host.stdoutLines == ["success"], "\(host.stdout)")
    }

    @Test("a host whose own stdout is blocked past the hung limit does not take a worker that returned for hung")
    func hostBehindOnItsOutput() throws {
        let fixture = try HostFixture([], isolation: "process")
        try TestPlugin.build("slow", source: Self.source, into: fixture.plugins)
        // The host's stdout goes to a relay that reads nothing until the
        // test opens the gate.
        let gate = fixture.scratch.file("gate")
        try #require(mkfifo(gate, 0o600) == 0)
        let script = #"g="$1"; shift; "$0" "$@" | { read -r _ < "$g"; exec cat; }"#
        let host = try ChildProcess(["-c", script, Products.xcallback, gate] + fixture.runPrefix + ["--timeout", "0.1"],
                                    executable: "/bin/sh", stdin: .pipe)
        // Records large enough to fill the pipe and block the thread that
        // reads the worker's answers (it writes the records), from a few KB
        // of input the host reads at once; then a request that times out
        // and whose handler returns 300 ms after that: its "returned"
        // waits, unread, behind the blocked thread.
        let flood = (0..<200).map { "slow://x-callback-url/big?n=\($0)\n" }.joined()
        #expect(host.write(flood + "slow://x-callback-url/nap?ms=400\n"))
        // Past the worker's hung limit (1 s after it began the nap) with the
        // answer unread: the worker must not be taken for hung.
        #expect(!host.waitForStderr(containing: "hung past its deadline", timeout: 2.5), "\(host.stderr)")
        let opener = open(gate, O_WRONLY)
        try #require(opener >= 0)
        _ = "go\n".withCString { write(opener, $0, 3) }
        close(opener)
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(60)) == .exited(0), "\(host.stderr)")
        #expect(host.stdoutLines.count == 201, "\(host.stderr)")
        #expect(!host.stderr.contains("hung past its deadline"), "\(host.stderr)")
        #expect(!host.stderr.contains("restarted plug-in"), "\(host.stderr)")
    }
}
