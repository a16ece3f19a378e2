import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A request that matches no route says what may explain it
/// (docs/usage.md, "Error codes"): the nearest route, a plug-in for its
/// scheme that is quarantined, a refused file that looks like it serves it,
/// or a plug-in folder that was skipped.
@Suite("NotFoundAction hints", .ownThreads)
struct NotFoundHintTests {
    @Test("a typo in the action suggests the nearest route")
    func typo() throws {
        let host = try HostFixture(["Calculator"])
        let result = try host.run(["-k"], lines: ["calc://x-callback-url/ad?lhs=1&rhs=1", "calc://x-callback-url/dvide"])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let messages = result.lines.map { recordParameters($0).first { $0.name == "errorMessage" }?.value }
        #expect(messages == ["no route matches calc://x-callback-url/ad (did you mean calc://x-callback-url/add?)",
                             "no route matches calc://x-callback-url/dvide (did you mean calc://x-callback-url/divide?)"])
    }

    @Test("a request for a refused plug-in's scheme says the file was refused, and why")
    func refusedFile() throws {
        let host = try HostFixture(["Faulty", "Calculator"])
        let faulty = host.plugins + "/libFaulty.so"
        chmod(faulty, 0o775)
        let result = try host.run(["-k"], lines: ["faulty://x-callback-url/fail", "calc://x-callback-url/add?lhs=1&rhs=1"])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let message = result.lines.first.flatMap { recordParameters($0).first { $0.name == "errorMessage" }?.value }
        #expect(message == "no route matches faulty://x-callback-url/fail; plug-in file \(faulty) was refused: file is writable by its group (mode 0775)")
        #expect(result.lines.last == "success?result=2")
    }

    @Test("a request for a scheme no plug-in serves says a default plug-in folder was skipped, and why",
          .enabled(if: access("/usr/local/lib/xcallback/plugins", F_OK) != 0 && access("/usr/lib/xcallback/plugins", F_OK) != 0,
                   "an xcallback is installed system-wide here (/usr/lib or /usr/local/lib/xcallback/plugins)"))
    func skippedFolder() throws {
        let scratch = try Scratch()
        let data = scratch.file("data")
        let folder = data + "/xcallback/plugins"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Products.plugin("Calculator"), toPath: folder + "/libCalculator.so")
        chmod(folder + "/libCalculator.so", 0o755)
        chmod(folder, 0o775)
        let run = try ChildProcess(["run", "-k", "--isolation", "none", "--no-summary"],
                                   stdin: .bytes(Array("calc://x-callback-url/add?lhs=1&rhs=1\n".utf8)),
                                   environment: ["HOME": scratch.path, "XDG_DATA_HOME": data, "PATH": "/usr/bin:/bin"])
        #expect(run.waitForExit(timeout: 10) == .exited(0), "stderr: \(run.stderr)")
        let message = ChildProcess.lines(run.stdout).first.flatMap { recordParameters($0).first { $0.name == "errorMessage" }?.value }
        #expect(message == "no route matches calc://x-callback-url/add; skipped plug-in directory \(folder): refused: "
                + "directory is writable by its group (mode 0775); run chmod g-w, or pass --allow-insecure-plugins",
                "stdout: \(run.stdout) stderr: \(run.stderr)")
    }

    @Test("a miss on a quarantined plug-in's scheme says it is quarantined", .scaledTimeLimit(minutes: 1))
    func quarantined() throws {
        let session = try IsolationTests.Session(["Faulty"], arguments: ["--restart-limit", "1", "--quarantine", "60"])
        #expect(try session.ask(RestartTests.crash).errorCode == "PluginCrashed")
        #expect(try session.ask(RestartTests.crash).errorCode == "PluginCrashed")
        let missed = try session.ask("faulty://x-callback-url/fial")
        #expect(missed.errorCode == "NotFoundAction", "\(missed)")
        let message = missed.params["errorMessage"] ?? ""
        #expect(message.hasPrefix("no route matches faulty://x-callback-url/fial (did you mean faulty://x-callback-url/fail?); plug-in 'faulty' crashed 2 times"), "\(message)")
        #expect(message.contains("quarantine"), "\(message)")
        try session.finish()
    }
}
