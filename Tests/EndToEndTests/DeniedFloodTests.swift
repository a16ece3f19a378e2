import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A worker that floods denied system calls is slowed, not served
/// (docs/reliability.md, "One bad neighbour"): past 1,000 a second its
/// calls wait for their answers, so the host spends a bounded share of a
/// core on it. Before, the host answered as fast as the worker asked: a
/// fifth of a core in a debug build (33,000 calls a second), about a core
/// in a release build.
@Suite("A worker flooding denied calls", .ownThreads)
struct DeniedFloodTests {
    /// Tries to open a socket (denied: no `network`) for `seconds`, and
    /// answers how many times it tried.
    static let source = """
        #include <stdio.h>
        #include <stdlib.h>
        #include <sys/socket.h>
        #include <time.h>
        #include <unistd.h>
        #include "xcallback.h"
        XCALLBACK_PLUGIN("flood", "1.0.0", "floods denied calls")
        static const xcallback_host_api *host;
        static void go(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)unused;
            const char *text = host->request_parameter(request, "seconds", NULL);
            double seconds = text ? atof(text) : 1;
            struct timespec start, now;
            clock_gettime(CLOCK_MONOTONIC, &start);
            long calls = 0;
            do {
                int fd = socket(AF_INET, SOCK_STREAM, 0);
                if (fd >= 0) close(fd);
                calls++;
                clock_gettime(CLOCK_MONOTONIC, &now);
            } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
            char count[32];
            snprintf(count, sizeof count, "%ld", calls);
            const xcallback_param output[] = { { "calls", count } };
            host->reply_success(reply, output, 1);
        }
        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            return api->register_action(plugin, "flood", "go", go, NULL);
        }
        """

    /// The host's CPU time so far, in seconds (user and system).
    static func cpuSeconds(of pid: pid_t) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("3 s of denied calls: the worker is held near 1,000 a second, the host under a tenth of a core",
          .requires(.cc), .scaledTimeLimit(minutes: 1))
    func floodIsThrottled() throws {
        let fixture = try HostFixture([], isolation: "process")
        try TestPlugin.build("flood", source: Self.source, into: fixture.plugins)
        let host = try fixture.start(["--output", "jsonl"], stdin: .pipe)
        let seconds = 3.0
        let before = try Self.cpuSeconds(of: host.pid)
        let began = Date()
        #expect(host.write("flood://x-callback-url/go?seconds=\(seconds)\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(30)), "stderr: \(host.stderr)")
        let wall = Date().timeIntervalSince(began)
        let used = try Self.cpuSeconds(of: host.pid) - before
        let record = try Record(jsonLine: host.stdoutLines[0])
        let calls = try #require(record.params["calls"].flatMap { Int($0) }, "\(record)")
        #expect(host.stderr.contains("denied (EACCES)"), "stderr: \(host.stderr)")
        // The burst, then the rate (with room for a late start).
        #expect(calls <= 1000 + Int(seconds * 1000 * 1.2), "\(calls) calls answered in \(seconds) s")
        #expect(used < wall * 0.1, "the host used \(used) s of CPU in \(wall) s")
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
    }
}
