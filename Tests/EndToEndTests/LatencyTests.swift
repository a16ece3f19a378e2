import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Honest latency (issue 46, item 2): the histogram's quantiles, as
/// Prometheus's `histogram_quantile` and `top` read them, within 10 % of
/// what handlers of 100 µs and 50 ms measured themselves. Before, requests
/// were stamped with the 4 ms coarse clock and the buckets were 1–2.5–5 a
/// decade: a 50 ms handler's p50 read 62.5 ms, a fast one's p99 4.9 ms.
@Suite("Latency: quantiles within 10 % of what the handlers took", .ownThreads)
struct LatencyTests {
    /// A plug-in whose one action sleeps `us` microseconds and answers how
    /// long it took by its own clock (`took`, ns), from entry to reply.
    static func source(name: String) -> String {
        #"""
        #include <stdio.h>
        #include <stdlib.h>
        #include <time.h>

        #include "xcallback.h"

        XCALLBACK_PLUGIN("@NAME@", "1.0.0", "Sleeps as long as asked, and says how long it took")

        static const xcallback_host_api *host;

        static long long now_ns(void) {
            struct timespec time;
            clock_gettime(CLOCK_MONOTONIC, &time);
            return (long long)time.tv_sec * 1000000000LL + time.tv_nsec;
        }

        static void sleep_for(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)unused;
            long long begin = now_ns();
            const char *text = host->request_parameter(request, "us", NULL);
            long micros = text ? atol(text) : 0;
            struct timespec wait = { micros / 1000000, (micros % 1000000) * 1000 };
            while (nanosleep(&wait, &wait) != 0) {}
            char took[32];
            snprintf(took, sizeof took, "%lld", now_ns() - begin);
            xcallback_param out = { "took", took };
            host->reply_success(reply, &out, 1);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            return api->register_action(plugin, "@NAME@", "sleep", sleep_for, NULL);
        }
        """#.replacingOccurrences(of: "@NAME@", with: name)
    }

    static let requests = 2000

    @Test("handlers of 100 µs and 50 ms, 2,000 requests each: histogram_quantile and top's p50 and p99",
          .scaledTimeLimit(minutes: 2))
    func quantilesOfKnownHandlers() throws {
        let fixture = try HostFixture([], isolation: "none")
        try TestPlugin.build("quick", source: Self.source(name: "quick"), into: fixture.plugins)
        try TestPlugin.build("slow", source: Self.source(name: "slow"), into: fixture.plugins)
        let socketPath = fixture.scratch.file("host.sock")
        let metrics = fixture.scratch.file("metrics.sock")
        let host = try fixture.start(["--socket", socketPath, "--metrics", metrics, "--output", "url"], stdin: .null)
        try #require(waitForSocketListener(socketPath, host: host), "stderr: \(host.stderr)")
        try #require(waitForSocketListener(metrics, host: host), "stderr: \(host.stderr)")

        // In process, a connection's requests run one after another on its
        // thread: the 100 µs ones on one connection, the 50 ms ones over 40
        // (2.5 s, not 100).
        let quick = try Self.exchange(socketPath, connections: 1, line: "quick://x-callback-url/sleep?us=100")
        let slow = try Self.exchange(socketPath, connections: 40, line: "slow://x-callback-url/sleep?us=50000")
        try #require(quick.count == Self.requests && slow.count == Self.requests, "stderr: \(host.stderr)")

        let (held, samples) = Scrape.waitFor(unix: metrics) {
            $0[MetricsTests.requests("quick", "success")] == Double(Self.requests)
                && $0[MetricsTests.requests("slow", "success")] == Double(Self.requests)
        }
        try #require(held, "\(samples.filter { $0.key.hasPrefix("xcallback_requests_total") })")
        let top = try xcallback(["top", "--count", "1", metrics], timeout: TestTiming.scaled(20))
        #expect(top.status == .exited(0), "stderr: \(top.stderr)")

        for (plugin, took) in [("quick", quick), ("slow", slow)] {
            let sorted = took.sorted()
            let buckets = Self.buckets(samples, plugin: plugin)
            // Requests of 20 µs or more are all timed (docs/observability.md,
            // "Latency and the clock"): the sample is every request here.
            let sampled = samples["xcallback_request_duration_seconds_count{plugin=\"\(plugin)\"}"] ?? 0
            #expect(sampled >= 0.95 * Double(Self.requests), "\(plugin): \(sampled) of \(Self.requests) timed")
            let line = ChildProcess.lines(top.stdout).first { $0.contains(" plugin=\(plugin) ") }
            for q in [0.5, 0.99] {
                // What the handlers measured, nearest rank.
                let truth = sorted[min(Int((q * Double(sorted.count)).rounded(.up)) - 1, sorted.count - 1)]
                let scraped = try #require(Self.histogramQuantile(q, buckets), "\(plugin): no buckets")
                let shown = try #require(line.flatMap { Self.topDuration($0, q == 0.5 ? "p50" : "p99") },
                                         "top: \(top.stdout)")
                let context = "\(plugin) p\(Int(q * 100)): handlers \(truth / 1000) µs, " +
                    "histogram_quantile \(scraped * 1e6) µs, top \(shown * 1e6) µs; " +
                    "handlers' p50/p99/max \(sorted[sorted.count / 2] / 1000)/\(sorted[sorted.count * 99 / 100] / 1000)/\(sorted.last! / 1000) µs"
                // The host times a request from just before it calls the
                // handler to its outcome counted, the handler itself from
                // entry to reply: the host's own part is a few µs, within
                // 10 % of 100 µs at the median. At the 99th percentile of
                // a busy machine the host's thread is now and then
                // preempted in its part too, which the handler does not see
                // (60 µs past its p99 was seen with other builds running):
                // so p99 may be above the handler's by 10 % and 0.2 ms,
                // never below by more than 10 %.
                let over = q == 0.5 ? 0.1 * truth : 0.1 * truth + 200_000
                for (what, value) in [("histogram_quantile", scraped), ("top", shown)] {
                    #expect(value * 1e9 >= 0.9 * truth && value * 1e9 <= truth + over, "\(what): \(context)")
                }
            }
        }
        host.send(signal: SIGTERM)
        #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
    }

    /// Sends `requests` lines over `connections` connections (all written
    /// first: a connection's lines run in order, the connections at once),
    /// and returns what each request's handler measured, in ns.
    static func exchange(_ path: String, connections: Int, line: String) throws -> [Double] {
        let perConnection = requests / connections
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        for _ in 0..<connections {
            let socket = try #require(connectUnixSocket(path))
            sockets.append(socket)
            var timeout = timeval(tv_sec: Int(TestTiming.scaled(30)), tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        let text = Array(String(repeating: line + "\n", count: perConnection).utf8)
        for socket in sockets {
            let sent = text.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            try #require(sent == text.count, "sent \(sent) of \(text.count) bytes")
        }
        var took: [Double] = []
        for socket in sockets {
            let records = readLines(socket, count: perConnection)
            try #require(records.count == perConnection, "\(records.count) records: \(records.suffix(3))")
            for record in records {
                let value = record.split(separator: "&").lazy.compactMap { part -> Double? in
                    guard let equals = part.firstIndex(of: "="),
                          part[..<equals].hasSuffix("took") else { return nil }
                    return Double(part[part.index(after: equals)...])
                }.first
                took.append(try #require(value, "no took in \(record)"))
            }
        }
        return took
    }

    /// `count` lines from `socket` (fewer when it ends or times out).
    static func readLines(_ socket: Int32, count: Int) -> [String] {
        var lines: [String] = []
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while lines.count < count {
            let read = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { break }
            pending += chunk[..<read]
            while let newline = pending.firstIndex(of: 0x0A) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
        }
        return lines
    }

    /// A plug-in's cumulative buckets, by upper bound, `+Inf` last.
    static func buckets(_ samples: [String: Double], plugin: String) -> [(bound: Double, count: Double)] {
        let prefix = "xcallback_request_duration_seconds_bucket{plugin=\"\(plugin)\",le=\""
        return samples.compactMap { key, value -> (bound: Double, count: Double)? in
            guard key.hasPrefix(prefix) else { return nil }
            let le = key.dropFirst(prefix.count).dropLast(2)
            return (le == "+Inf" ? .infinity : Double(le) ?? .nan, value)
        }.sorted { $0.bound < $1.bound }
    }

    /// Prometheus's `histogram_quantile`: the rank's bucket, and a linear
    /// interpolation within it (from 0 for the first bucket; the highest
    /// finite bound when the rank is in `+Inf`).
    static func histogramQuantile(_ q: Double, _ buckets: [(bound: Double, count: Double)]) -> Double? {
        guard let total = buckets.last?.count, total > 0, buckets.last?.bound == .infinity else { return nil }
        let rank = q * total
        guard let index = buckets.firstIndex(where: { $0.count >= rank }) else { return nil }
        if index == buckets.count - 1 { return buckets[buckets.count - 2].bound }
        let lower = index == 0 ? 0 : buckets[index - 1].bound
        let below = index == 0 ? 0 : buckets[index - 1].count
        return lower + (buckets[index].bound - lower) * (rank - below) / (buckets[index].count - below)
    }

    /// A duration `top` printed (`p50=155µs`, `p99=50.3ms`), in seconds.
    static func topDuration(_ line: String, _ key: String) -> Double? {
        guard let field = line.split(separator: " ").first(where: { $0.hasPrefix(key + "=") }) else { return nil }
        let text = field.dropFirst(key.count + 1)
        for (unit, scale) in [("µs", 1e-6), ("ms", 1e-3), ("s", 1.0)] where text.hasSuffix(unit) {
            return Double(text.dropLast(unit.count)).map { $0 * scale }
        }
        return nil
    }
}
