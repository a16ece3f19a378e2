import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Caps are caps of memory, not of request text (docs/reliability.md,
/// "Memory caps"): with a worker stopped (SIGSTOP) and its waiting line
/// held at its cap of 64 MiB, the host's resident memory stays under the
/// cap plus the documented margin of 64 MiB. Before, the line counted only
/// its requests' URLs, and the host held about four times its cap.
@Suite("One bad neighbour: memory caps", .ownThreads)
struct MemoryCapTests {
    /// The documented bound: the waiting line's cap, and a margin.
    static let boundMiB = 64 + 64

    /// VmRSS and VmHWM of `pid`, in MiB.
    static func residentMiB(_ pid: pid_t) -> (now: Int, peak: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
                .map { $0 / 1024 }
        }
        guard let now = field("VmRSS"), let peak = field("VmHWM") else { return nil }
        return (now, peak)
    }

    @Test("the waiting line full: the host's RSS stays under its cap and the margin", arguments: ["url", "jsonl"])
    func waitingLineFull(output: String) throws {
        let fixture = try HostFixture([], isolation: "process")
        let library = try TestPlugin.build("mute", source: MutePlugin.source, into: fixture.plugins)
        let host = try fixture.start(["--timeout", "120", "--output", output])
        #expect(host.write("mute://x-callback-url/echo\n"))
        try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(20)), "\(host.stderr)")
        let worker = try #require(MutePlugin.worker(loading: library, of: host.pid), "no worker has \(library) mapped")
        kill(worker, SIGSTOP)
        // 3,000 requests of 16 kB (48 MB of lines, about 190 MB held as the
        // line counted them before): past what the stopped worker's socket
        // takes, they wait in its line until that is full, and the rest
        // are refused at once.
        let pad = String(repeating: "x", count: 16_000)
        let count = 3_000
        let lines = (0..<count).map { "mute://x-callback-url/echo?n=\($0)&pad=\(pad)\n" }
        for start in stride(from: 0, to: count, by: 500) {
            #expect(host.write(lines[start..<min(start + 500, count)].joined()))
        }
        // Refused: every request past the line (and the socket's buffer);
        // nothing else is answered while the worker is stopped.
        let full = host.waitForStdoutLines(1 + 1_000, timeout: 60)
        #expect(full, "\(host.stdoutLines.count) records")
        let last = host.stdoutLines.last { !$0.isEmpty } ?? ""
        #expect(last.contains("is%20not%20taking%20requests") || last.contains("is not taking requests"), "refused for another reason than a full line: \(last.prefix(300))")
        let resident = try #require(Self.residentMiB(host.pid))
        #expect(resident.now < Self.boundMiB && resident.peak < Self.boundMiB,
                "host RSS \(resident.now) MiB, peak \(resident.peak) MiB; bound \(Self.boundMiB) MiB")
        kill(worker, SIGCONT)
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(60)) == .exited(0), "\(host.stderr.suffix(2000))")
        #expect(host.stdoutLines.filter { !$0.isEmpty }.count == count + 1)
    }
}

/// A plug-in whose `echo` answers and whose `drop` never does.
enum MutePlugin {
    static let source = """
        #include "xcallback.h"
        XCALLBACK_PLUGIN("mute", "1.0.0", "drop never answers; echo does")
        static const xcallback_host_api *host;
        static void drop(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)reply; (void)unused;
        }
        static void echo(const xcallback_request *request, xcallback_reply reply, void *unused) {
            (void)request; (void)unused;
            host->reply_success(reply, NULL, 0);
        }
        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin) {
            host = api;
            int rc = api->register_action(plugin, "mute", "drop", drop, NULL);
            return rc ? rc : api->register_action(plugin, "mute", "echo", echo, NULL);
        }
        """

    /// The worker whose process has `library` mapped (by its file's name:
    /// a worker may map it from another path).
    static func worker(loading library: String, of host: pid_t) -> pid_t? {
        let name = URL(fileURLWithPath: library).lastPathComponent
        return workerProcesses(of: host).first { pid in
            // Read by hand: /proc reports a size of 0, and Foundation's
            // readers trust it.
            let descriptor = open("/proc/\(pid)/maps", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return false }
            defer { close(descriptor) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(descriptor, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                bytes.append(contentsOf: chunk[0..<count])
            }
            return String(decoding: bytes, as: UTF8.self).contains(name)
        }
    }
}
