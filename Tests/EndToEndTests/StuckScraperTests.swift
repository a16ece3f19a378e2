import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A metrics scraper that asks and never reads holds the server up for the
/// one deadline of its exchange (2 s), and a stop not at all
/// (docs/reliability.md, "One bad neighbour"). Before, once a page larger
/// than the socket's buffers met the 2 s send timeout, the server waited
/// for room without bound: other scrapes got no answer, and a host at the
/// end of its input did not exit until that client closed.
@Suite("A scraper that never reads", .ownThreads)
struct StuckScraperTests {
    /// A plug-in whose name and scheme are the bytes `pfill000` in its file:
    /// copies with those bytes changed (`renamed`) are as many plug-ins as
    /// wanted, from one build, and each adds its rows to the metrics page.
    static let source = """
        #include "xcallback.h"
        static const char name[] = "pfill000";
        XCALLBACK_PLUGIN(name, "1.0.0", "fills a metrics page")
        static const xcallback_host_api *host;
        static void go(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)unused;
            host->reply_success(reply, NULL, 0);
        }
        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            return api->register_action(plugin, name, "go", go, NULL);
        }
        """

    /// The plug-in's file with its name `pfill000` changed to `pfillNNN`.
    static func renamed(_ library: [UInt8], _ index: Int) -> [UInt8] {
        let placeholder = Array("pfill000".utf8)
        let name = Array(("pfill" + String(format: "%03d", index)).utf8)
        var bytes = library
        var at = 0
        while at + placeholder.count <= bytes.count {
            if bytes[at..<(at + placeholder.count)].elementsEqual(placeholder) {
                bytes.replaceSubrange(at..<(at + placeholder.count), with: name)
                at += placeholder.count
            } else {
                at += 1
            }
        }
        return bytes
    }

    /// A host with `count` such plug-ins in process, its metrics at `address`
    /// ("unix" or "tcp", port 0), the grace period `grace` seconds.
    final class Session: @unchecked Sendable {
        let fixture: HostFixture
        let host: ChildProcess
        let unixPath: String?
        let port: UInt16?

        init(address: String, plugins count: Int, grace: Int) throws {
            fixture = try HostFixture([], isolation: "none")
            let built = try TestPlugin.build("pfill000", source: StuckScraperTests.source, into: fixture.plugins)
            let library = Array(try Data(contentsOf: URL(fileURLWithPath: built)))
            for index in 1..<count {
                let copy = fixture.plugins + "/libpfill" + String(format: "%03d", index) + ".so"
                try Data(StuckScraperTests.renamed(library, index)).write(to: URL(fileURLWithPath: copy))
                chmod(copy, 0o755)
            }
            let asked = address == "unix" ? fixture.scratch.file("metrics.sock") : "127.0.0.1:0"
            host = try fixture.start(["--metrics", asked, "--grace-period", String(grace)], stdin: .pipe)
            if address == "unix" {
                unixPath = asked
                port = nil
                try #require(waitForSocketListener(asked, host: host), "stderr: \(host.stderr)")
            } else {
                unixPath = nil
                // The port the kernel chose is said at the default log level.
                try #require(host.waitForStderr(timeout: TestTiming.scaled(20)) { $0.contains("serving metrics at 127.0.0.1:") },
                             "stderr: \(host.stderr)")
                let line = try #require(host.stderr.split(separator: "\n").first { $0.contains("serving metrics at 127.0.0.1:") })
                let digits = line.split(separator: "127.0.0.1:")[1].prefix { $0.isNumber }
                port = UInt16(digits)
                try #require(port != nil, "no port in: \(line)")
            }
        }

        /// Connects, asks for the page, and never reads: a small receive
        /// buffer, so the host's answer backs up at once.
        func stuckClient() throws -> Int32 {
            let descriptor: Int32
            if let unixPath {
                descriptor = try #require(connectUnixSocket(unixPath))
            } else {
                // The buffer is set before connecting: it sets the window.
                descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                var size: Int32 = 4096
                setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = port!.bigEndian
                address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                try #require(connected == 0)
            }
            let request = Array(Scrape.get().utf8)
            #expect(send(descriptor, request, request.count, Int32(MSG_NOSIGNAL)) == request.count)
            return descriptor
        }

        /// A whole scrape, and how long it took.
        func timedScrape() -> (body: String?, seconds: Double) {
            let began = Date()
            let body = Scrape.body(unix: unixPath, port: port)
            return (body, Date().timeIntervalSince(began))
        }
    }

    /// Returns once CLOCK_MONOTONIC_COARSE has moved on (a few ms).
    static func awaitNextCoarseTick() {
        var start = timespec(), now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &start)
        repeat {
            sched_yield()
            clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        } while now.tv_sec == start.tv_sec && now.tv_nsec == start.tv_nsec
    }

    @Test("another scrape is answered within 3 s, and the host exits within its grace period",
          .scaledTimeLimit(minutes: 2), arguments: ["unix", "tcp"])
    func stuckScraper(address: String) throws {
        let plugins = 250
        let session = try Session(address: address, plugins: plugins, grace: 5)
        // A request each, and a timed one for the first 40: their latency
        // histograms (11 KB each) make the page larger than any socket
        // buffer between here and the host, and no larger (a page of every
        // histogram, 2.7 MB, takes a debug host beside hogs over a second
        // to write). The host times the first request to start in each
        // tick of its coarse clock (docs/observability.md), so those are
        // sent in a tick of their own: the tick's change is the event waited for.
        let timed = 40
        for index in 0..<timed {
            Self.awaitNextCoarseTick()
            #expect(session.host.write("pfill\(String(format: "%03d", index))://x-callback-url/go\n"))
            try #require(session.host.waitForStdoutLines(index + 1, timeout: TestTiming.scaled(20)), "stderr: \(session.host.stderr)")
        }
        #expect(session.host.write((timed..<plugins).map { "pfill\(String(format: "%03d", $0))://x-callback-url/go\n" }.joined()))
        try #require(session.host.waitForStdoutLines(plugins, timeout: TestTiming.scaled(20)), "stderr: \(session.host.stderr)")
        let page = try #require(session.timedScrape().body, "stderr: \(session.host.stderr)")
        try #require(page.utf8.count > 300_000, "a page of \(page.utf8.count) bytes would not back up")

        let stuck = try session.stuckClient()
        defer { close(stuck) }
        // Queued behind the stuck one: served once its deadline (2 s) passes.
        let next = session.timedScrape()
        #expect(next.body?.contains("xcallback_build_info") == true, "stderr: \(session.host.stderr)")
        #expect(next.seconds < TestTiming.scaled(3), "another scrape took \(next.seconds) s")

        // A stop, with a client stuck again: the host does not wait for it.
        let again = try session.stuckClient()
        defer { close(again) }
        // Its request is read and the answer under way before the stop.
        usleep(300_000)
        let stopped = Date()
        session.host.closeInput()
        #expect(session.host.waitForExit(timeout: TestTiming.scaled(20)) == .exited(0), "stderr: \(session.host.stderr)")
        let seconds = Date().timeIntervalSince(stopped)
        #expect(seconds < 5, "the host took \(seconds) s to exit, past its grace period (5 s)")
    }
}
