import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The host removes a plug-in's scratch folder only once every worker that
/// could write there has ended (one still starting included), and then
/// never follows a link in it (issue 41, item 4). Before, a worker that
/// swapped a folder and a link to an outside folder while the host stopped
/// made the host's clean-up delete 51 to 166 of that folder's 400 files.
@Suite("Scratch clean-up race", .ownThreads, .serialized)
struct ScratchRaceTests {
    static let outsideFiles = 400

    static let rounds = 20

    /// Where the kernel lends a worker a file view, its scratch folder is a
    /// tmpfs of its own (gone with the worker, `armed` included) that the
    /// host never walks. Where it does not, it is a folder on the host's
    /// disk the host removes: the fallback this race is about, had here by
    /// making `unshare` fail.
    @Test("a worker swapping a link into its scratch folder while the host stops: nothing outside is deleted (20 rounds)",
          .scaledTimeLimit(minutes: 3))
    func swapWhileStopping() throws {
        let fixture = try HostFixture([], isolation: "process")
        // A root host's workers run as another user, who must reach the
        // scratch folders made in here.
        #expect(chmod(fixture.scratch.path, 0o711) == 0)
        let outside = fixture.scratch.file("outside")
        #expect(mkdir(outside, 0o755) == 0)
        for index in 0..<Self.outsideFiles {
            try Data("keep\n".utf8).write(to: URL(fileURLWithPath: outside + "/file-\(index)"))
        }
        try TestPlugin.build(ScratchRacePlugin.name, source: ScratchRacePlugin.source(outside: outside), into: fixture.plugins)
        let launcher = try SandboxTests.launcher(failing: ["unshare"], with: "EPERM", in: fixture.scratch)
        for round in 1...Self.rounds {
            // The host's scratch folders go here, so the test sees them.
            let temporary = fixture.scratch.file("tmp-\(round)")
            #expect(mkdir(temporary, 0o755) == 0)
            var environment = ProcessInfo.processInfo.environment
            environment["TMPDIR"] = temporary
            environment.removeValue(forKey: "XCALLBACK_PLUGIN_PATH")
            let arguments = fixture.runPrefix + ["--output", "jsonl", "--grace-period", "0", "--log-level", "info"]
            let host = try ChildProcess([Products.xcallback] + arguments, executable: launcher, stdin: .pipe,
                                        environment: environment)
            #expect(host.write("swap://x-callback-url/arm\n"))
            try #require(host.waitForStdoutLines(1, timeout: TestTiming.scaled(10)), "round \(round): no record; stderr: \(host.stderr)")
            // The restarted worker is racing in its constructor.
            try #require(host.waitForStderr(containing: "swapping", timeout: TestTiming.scaled(10)),
                         "round \(round): the worker never raced; stderr: \(host.stderr)")
            if round == 1 { #expect(host.stderr.contains("no file view"), "\(host.stderr)") }
            host.send(signal: SIGTERM)
            #expect(host.waitForExit(timeout: TestTiming.scaled(10)) == .exited(0), "round \(round): stderr: \(host.stderr)")
            let kept = (try? FileManager.default.contentsOfDirectory(atPath: outside).count) ?? -1
            #expect(kept == Self.outsideFiles, "round \(round): the host's clean-up deleted \(Self.outsideFiles - kept) files outside")
            let left = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
            #expect(left.isEmpty, "round \(round): scratch folders left: \(left); stderr: \(host.stderr)")
            #expect(!host.stderr.contains("left the scratch folder"), "round \(round): \(host.stderr)")
            guard kept == Self.outsideFiles else { return }
        }
    }
}
