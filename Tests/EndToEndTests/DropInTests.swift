import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/routing-and-isolation.md, hot drop-in: while a host reads a FIFO, plug-in files
/// added, replaced or removed take effect within 2 s, with no restart and
/// no lost request; a half-copied or invalid file is rejected and logged.
@Suite("Hot drop-in", .ownThreads, .serialized)
struct DropInTests {
    /// A FIFO host over an initially empty plug-in directory.
    final class FIFOHost: @unchecked Sendable {
        let fixture: HostFixture
        let fifo: String
        let host: ChildProcess
        private let lock = NSLock()
        private var sent = 0

        init(isolation: String = "process", arguments: [String] = []) throws {
            fixture = try HostFixture([], isolation: isolation)
            fifo = fixture.scratch.file("requests.fifo")
            host = try fixture.start(["--fifo", fifo, "--output", "jsonl"] + arguments, stdin: .null)
            try #require(waitForFIFOReader(fifo, host: host), "stderr: \(host.stderr)")
        }

        /// Installs the way the README says: copy to a dot-name, then rename.
        func install(_ plugin: String, as name: String) throws {
            let temporary = fixture.plugins + "/.\(name).tmp"
            try? FileManager.default.removeItem(atPath: temporary)
            try FileManager.default.copyItem(atPath: Products.plugin(plugin), toPath: temporary)
            chmod(temporary, 0o755)
            #expect(rename(temporary, fixture.plugins + "/" + name) == 0)
        }

        /// Writes one line to the FIFO (one atomic write).
        func send(_ line: String) {
            let descriptor = open(fifo, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                Issue.record("open \(fifo): \(String(cString: strerror(errno)))")
                return
            }
            let bytes = Array((line + "\n").utf8)
            #expect(write(descriptor, bytes, bytes.count) == bytes.count)
            close(descriptor)
            lock.lock()
            sent += 1
            lock.unlock()
        }

        var sentCount: Int {
            lock.lock()
            defer { lock.unlock() }
            return sent
        }

        /// Sends `line` and returns its record.
        func ask(_ line: String) throws -> Record {
            send(line)
            try #require(host.waitForStdoutLines(sentCount, timeout: 10), "no record for \(line); stderr: \(host.stderr)")
            return try Record(jsonLine: host.stdoutLines[sentCount - 1])
        }

        /// Asks until `accept` holds (each answer waited for), at most `seconds`.
        func askUntil(_ line: String, seconds: Double, _ accept: (Record) -> Bool) throws -> Record {
            let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(seconds))
            var record = try ask(line)
            while !accept(record) && Date() < deadline {
                // The change is asynchronous by design; re-ask a few times a second.
                usleep(100_000)
                record = try ask(line)
            }
            return record
        }

        func stop() {
            host.send(signal: SIGTERM)
            #expect(host.waitForExit(timeout: 10) == .exited(0), "stderr: \(host.stderr)")
        }
    }

    static let add = "calc://x-callback-url/add?lhs=1&rhs=2"

    @Test("a dropped-in plug-in answers within 5 s; a removed one stops answering", .scaledTimeLimit(minutes: 1),
          arguments: ["process", "none"])
    func addThenRemove(isolation: String) throws {
        let session = try FIFOHost(isolation: isolation)
        #expect(try session.ask(Self.add).errorCode == "NotFoundAction")
        let dropped = Date()
        try session.install("Calculator", as: "calc.so")
        let after = try session.askUntil(Self.add, seconds: 5) { $0.outcome == "success" }
        #expect(after.params["result"] == "3")
        #expect(Date().timeIntervalSince(dropped) < 5)

        #expect(unlink(session.fixture.plugins + "/calc.so") == 0)
        let removed = try session.askUntil(Self.add, seconds: 5) { $0.errorCode == "NotFoundAction" }
        #expect(removed.errorCode == "NotFoundAction")
        session.stop()
    }

    @Test("a truncated copy is rejected and logged; a valid file renamed over it loads", .scaledTimeLimit(minutes: 1))
    func truncatedThenFixed() throws {
        let session = try FIFOHost()
        try session.install("Calculator", as: "calc.so")
        #expect(try session.askUntil(Self.add, seconds: 5) { $0.outcome == "success" }.params["result"] == "3")

        // A half-written Pokedex, as an interrupted cp leaves it.
        let broken = session.fixture.plugins + "/pokedex.so"
        let whole = try Data(contentsOf: URL(fileURLWithPath: Products.plugin("Pokedex")))
        try whole.prefix(whole.count / 3).write(to: URL(fileURLWithPath: broken))
        chmod(broken, 0o755)
        #expect(session.host.waitForStderr(containing: "pokedex.so", timeout: 5), "stderr: \(session.host.stderr)")
        #expect(try session.ask("pokedex://pokemons/25").errorCode == "NotFoundAction")
        // The host is fine and the other plug-in still answers.
        #expect(try session.ask(Self.add).params["result"] == "3")

        try session.install("Pokedex", as: "pokedex.so")
        let fixed = try session.askUntil("pokedex://pokemons/25", seconds: 5) { $0.outcome == "success" }
        #expect(fixed.params["name"] == "Pikachu")
        session.stop()
    }

    @Test("replacing a plug-in under load: every request gets exactly one outcome", .scaledTimeLimit(minutes: 1))
    func replaceUnderLoad() throws {
        let session = try FIFOHost()
        try session.install("Calculator", as: "calc.so")
        #expect(try session.askUntil(Self.add, seconds: 5) { $0.outcome == "success" }.outcome == "success",
                "host stderr: \(session.host.stderr)")
        let before = session.sentCount

        let total = 600
        let writer = Thread {
            for index in 0..<total {
                session.send("calc://x-callback-url/add?lhs=\(index)&rhs=0&text=r\(index)")
                if index % 50 == 0 { usleep(20_000) }  // spread the load over the replacements
            }
        }
        writer.start()
        for _ in 0..<2 {
            try session.install("Calculator", as: "calc.so")
            usleep(300_000)
        }
        #expect(session.host.waitForStdoutLines(before + total, timeout: 30), "records: \(session.host.stdoutLines.count)")
        let records = try session.host.stdoutLines.dropFirst(before).map { try Record(jsonLine: $0) }
        #expect(records.count == total)
        let labels = records.compactMap { $0.params["result"]?.split(separator: "=").first.map(String.init) }
        #expect(Set(labels) == Set((0..<total).map { "r\($0)" }), "each request answered once, successfully")
        #expect(records.allSatisfy { $0.outcome == "success" }, "\(records.filter { $0.outcome != "success" }.prefix(3))")
        session.stop()
    }
}

/// Reloading in process does not pile up descriptors (docs/routing-and-isolation.md, "Hot
/// drop-in"): before, each reload kept one open for good (13 → 113 after
/// 100 reloads).
@Suite("In-process reloads", .ownThreads)
struct InProcessReloadTests {
    static func openDescriptors(of pid: pid_t) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
    }

    @Test("50 reloads of a plug-in in process leave the host's descriptor count where it was", .scaledTimeLimit(minutes: 2))
    func reloadsDoNotLeakDescriptors() throws {
        let session = try DropInTests.FIFOHost(isolation: "none", arguments: ["--log-level", "notice"])
        try session.install("Calculator", as: "calc.so")
        let add = "calc://x-callback-url/add?lhs=1&rhs=2"
        #expect(try session.askUntil(add, seconds: 10) { $0.outcome == "success" }.params["result"] == "3")
        let before = Self.openDescriptors(of: session.host.pid)
        for round in 1...50 {
            try session.install("Calculator", as: "calc.so")
            try #require(session.host.waitForStderr(timeout: TestTiming.scaled(10)) {
                $0.components(separatedBy: "reloaded plug-in 'calculator'").count - 1 >= round
            }, "reload \(round) not seen; stderr: \(session.host.stderr.suffix(1000))")
        }
        #expect(try session.ask(add).params["result"] == "3")
        let after = Self.openDescriptors(of: session.host.pid)
        #expect(after - before <= 2, "descriptors: \(before) before 50 reloads, \(after) after")
        session.stop()
    }
}
