import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `--metrics` says at the default log level what it exposes and where
/// (docs/observability.md, "Serving"): an address other than loopback or
/// a socket path is named in a warning, and the port chosen for `:0` is
/// printed, since nothing else tells it.
@Suite("What --metrics exposes", .ownThreads)
struct MetricsExposureTests {
    /// A host serving metrics at `address`, and its stderr once it serves.
    static func stderr(serving address: String) throws -> String {
        let fixture = try HostFixture(["Calculator"], isolation: "none")
        let host = try fixture.start(["--metrics", address], stdin: .pipe)
        let serving = host.waitForStderr(timeout: TestTiming.scaled(10)) { $0.contains("serving metrics at ") }
        let stderr = host.stderr
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0), "stderr: \(host.stderr)")
        try #require(serving, "no 'serving metrics at' line at the default level; stderr: \(stderr)")
        return stderr
    }

    @Test("every interface: a warning names it, and the chosen port is printed")
    func everyInterface() throws {
        let stderr = try Self.stderr(serving: "0.0.0.0:0")
        let lines = stderr.split(separator: "\n")
        #expect(lines.filter { $0.contains("listens on every interface") }.count == 1, "\(stderr)")
        #expect(lines.contains { $0.contains("--metrics 0.0.0.0:") && $0.contains("warning") }, "\(stderr)")
        let serving = try #require(lines.first { $0.contains("serving metrics at 0.0.0.0:") }, "\(stderr)")
        let port = serving.split(separator: "0.0.0.0:")[1].prefix { $0.isNumber }
        #expect((UInt16(port) ?? 0) > 0, "no port in: \(serving)")
    }

    @Test("loopback, port 0: the port is printed, and no exposure is claimed")
    func loopbackChosenPort() throws {
        let stderr = try Self.stderr(serving: "127.0.0.1:0")
        #expect(!stderr.contains("listens on"), "\(stderr)")
        let serving = try #require(stderr.split(separator: "\n").first { $0.contains("serving metrics at 127.0.0.1:") })
        #expect((UInt16(serving.split(separator: "127.0.0.1:")[1].prefix { $0.isNumber }) ?? 0) > 0, "\(serving)")
    }

    @Test("a socket path: nothing said at the default level")
    func socketPath() throws {
        let fixture = try HostFixture(["Calculator"], isolation: "none")
        let path = fixture.scratch.file("metrics.sock")
        let host = try fixture.start(["--metrics", path], stdin: .pipe)
        try #require(waitForSocketListener(path, host: host), "stderr: \(host.stderr)")
        host.closeInput()
        #expect(host.waitForExit(timeout: TestTiming.scaled(15)) == .exited(0))
        #expect(!host.stderr.contains("metrics"), "\(host.stderr)")
    }
}
