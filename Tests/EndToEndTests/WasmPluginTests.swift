#if Wasm  // the package's Wasm trait: swift build --traits Wasm
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// docs/wasm.md: `NAME.wasm` in a plug-in folder is a plug-in, in the host
/// (`--isolation none`, the VM the wall) and in a worker (`--isolation
/// process`, the VM inside the sandbox). What a module does wrong ends its
/// own request, never the host.
@Suite("WebAssembly plug-ins", .ownThreads)
struct WasmPluginTests {
    /// A host on a pipe with `hello.wasm` (and a 64 MiB memory capability)
    /// in its plug-in folder, answering in jsonl, one request at a time.
    final class Session: @unchecked Sendable {
        let fixture: HostFixture
        let host: ChildProcess
        private var answered = 0

        init(isolation: String, arguments: [String] = []) throws {
            fixture = try HostFixture([], isolation: isolation)
            try WasmFixture.install(WasmFixture.hello(), in: fixture.plugins)
            try Data("memory = 64\n".utf8).write(to: URL(fileURLWithPath: fixture.plugins + "/hello.caps.toml"))
            host = try fixture.start(["--output", "jsonl"] + arguments, stdin: .pipe)
        }

        func ask(_ line: String, timeout: Double = 20) throws -> Record {
            #expect(host.write(line + "\n"))
            answered += 1
            try #require(host.waitForStdoutLines(answered, timeout: TestTiming.scaled(timeout)),
                         "no record for \(line) within \(timeout) s; stderr: \(host.stderr)")
            return try Record(jsonLine: host.stdoutLines[answered - 1])
        }

        func finish() {
            host.closeInput()
            #expect(host.waitForExit(timeout: TestTiming.scaled(30)) == .exited(0), "stderr: \(host.stderr)")
        }
    }

    @Test("success with parameters, error with parameters, cancel and a pattern route", arguments: ["none", "process"])
    func answers(isolation: String) throws {
        let session = try Session(isolation: isolation)
        let greet = try session.ask("hello://x-callback-url/greet?name=W%C3%B6rld")
        #expect(greet.outcome == "success" && greet.params["greeting"] == "Wörld", "\(greet)")
        let missing = try session.ask("hello://x-callback-url/greet")
        #expect(missing.errorCode == "Nope" && missing.errorDomain == "hello", "\(missing)")
        let fail = try session.ask("hello://x-callback-url/fail")
        #expect(fail.errorCode == "Nope" && fail.params["errorMessage"] == "it failed" && fail.params["reason"] == "it failed",
                "\(fail)")
        #expect(try session.ask("hello://x-callback-url/cancel").outcome == "cancel")
        let item = try session.ask("hello://items/42")
        #expect(item.outcome == "success" && item.params["id"] == "42", "\(item)")
        session.finish()
    }

    @Test("a loop ends as Timeout at --timeout; a memory.grow bomb as MemoryLimit; a trap and a bad pointer as PluginCrashed; the next request is answered each time",
          .timeLimit(.minutes(3)), arguments: ["none", "process"])
    func bounds(isolation: String) throws {
        let session = try Session(isolation: isolation, arguments: ["--timeout", "2"])
        func greets() throws {
            let record = try session.ask("hello://x-callback-url/greet?name=again")
            #expect(record.outcome == "success" && record.params["greeting"] == "again", "\(record)")
        }
        let start = Date()
        let spin = try session.ask("hello://x-callback-url/spin")
        let seconds = Date().timeIntervalSince(start)
        #expect(spin.errorCode == "Timeout", "\(spin)")
        #expect(seconds >= 1.5 && seconds < TestTiming.scaled(8), "Timeout after \(seconds) s, for --timeout 2")
        try greets()
        let bomb = try session.ask("hello://x-callback-url/bomb")
        #expect(bomb.errorCode == "MemoryLimit", "\(bomb)")
        try greets()
        let trap = try session.ask("hello://x-callback-url/trap")
        #expect(trap.errorCode == "PluginCrashed", "\(trap)")
        try greets()
        let pointer = try session.ask("hello://x-callback-url/badptr")
        #expect(pointer.errorCode == "PluginCrashed" && pointer.params["errorMessage"]?.contains("outside the module's memory") == true,
                "\(pointer)")
        try greets()
        session.finish()
    }

    @Test("a module built for another ABI major, or a newer minor, is refused with both versions named")
    func versionMismatch() throws {
        for (version, words) in [(0x2_0000, ["major", "2.0", "1.0"]), (0x1_0007, ["minor", "1.7", "1.0"])] {
            let fixture = try HostFixture([])
            let path = try WasmFixture.install(WasmFixture.hello(abiVersion: version), in: fixture.plugins)
            let check = try xcallback(["check", path])
            #expect(!check.status.isSuccess)
            for word in words {
                #expect(check.stderr.contains(word) || check.stdout.contains(word), "\(word) missing: \(check.stdout) \(check.stderr)")
            }
        }
    }

    @Test("an import the host does not have is refused at load, named; the host serves the rest")
    func unknownImport() throws {
        let fixture = try HostFixture(["Calculator"])
        try WasmFixture.install(
            WasmFixture.hello(extraImport: #"(import "xcallback" "teleport" (func $teleport (param i32)))"#),
            in: fixture.plugins)
        let result = try fixture.run(["--output", "jsonl"], lines: ["calc://x-callback-url/add?lhs=1&rhs=2"])
        #expect(result.stderr.contains("xcallback.teleport"), "\(result.stderr)")
        #expect(try result.records().first?.outcome == "success")
    }

    @Test("plugins --json and routes list a wasm plug-in like any other")
    func listings() throws {
        let fixture = try HostFixture([])
        try WasmFixture.install(WasmFixture.hello(), in: fixture.plugins)
        let plugins = try xcallback(["plugins", "--plugins", fixture.plugins, "--json"])
        #expect(plugins.status.isSuccess, "\(plugins.stderr)")
        #expect(plugins.stdout.contains("\"hello\"") && plugins.stdout.contains("1.0.0"), "\(plugins.stdout)")
        let routes = try xcallback(["routes", "--plugins", fixture.plugins])
        #expect(routes.stdout.contains("hello://x-callback-url/greet") && routes.stdout.contains("hello://items/:id"),
                "\(routes.stdout) \(routes.stderr)")
    }
}

extension WasmPluginTests {
    @Test("dropped into a running host, a .wasm plug-in answers; a new version renamed over it replaces it",
          .timeLimit(.minutes(2)), arguments: ["process", "none"])
    func dropIn(isolation: String) throws {
        let session = try DropInTests.FIFOHost(isolation: isolation)
        let greet = "hello://x-callback-url/greet?name=drop"
        #expect(try session.ask(greet).errorCode == "NotFoundAction")
        try WasmFixture.dropIn(WasmFixture.hello(), in: session.fixture.plugins)
        let first = try session.askUntil(greet, seconds: 5) { $0.outcome == "success" }
        #expect(first.params["greeting"] == "drop", "\(first)")
        try WasmFixture.dropIn(WasmFixture.hello(greeting: "welcomed"), in: session.fixture.plugins)
        let second = try session.askUntil(greet, seconds: 5) { $0.params["welcomed"] != nil }
        #expect(second.params["welcomed"] == "drop", "\(second)")
        session.stop()
        #expect(session.host.stdoutLines.filter { !$0.isEmpty }.count == session.sentCount)
    }

    @Test("a C plug-in built by clang --target=wasm32 against `sdk --wasm` answers in both modes",
          .requires(.wasmClang), arguments: ["none", "process"])
    func cPlugin(isolation: String) throws {
        let fixture = try HostFixture([], isolation: isolation)
        if let problem = try WasmCPlugin.build(in: fixture.scratch.path, into: fixture.plugins) {
            Issue.record("the C plug-in did not build: \(problem)")
            return
        }
        let result = try fixture.run(["--output", "jsonl"], lines: [
            "cgreet://x-callback-url/hello?name=Ada", "cgreet://x-callback-url/hello",
        ])
        let records = try result.records()
        #expect(records.count == 2, "\(result.stderr)")
        #expect(records.first?.params["greeting"] == "Hello, Ada!", "\(records)")
        #expect(records.last?.errorCode == "MissingName" && records.last?.errorDomain == "cgreeter", "\(records)")
    }
}
#endif

#if Wasm
extension WasmPluginTests {
    @Test("a malformed module, and one missing an export the ABI needs, are refused at load, naming the file and what is wrong")
    func malformed() throws {
        let fixture = try HostFixture([])
        // A header, then a type section that claims more bytes than follow.
        let broken = fixture.plugins + "/broken.wasm"
        try Data([0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00, 0x01, 0x7F, 0x01]).write(to: URL(fileURLWithPath: broken))
        chmod(broken, 0o644)
        let check = try xcallback(["check", broken])
        #expect(!check.status.isSuccess)
        #expect(check.stderr.contains("broken.wasm") && check.stderr.contains("not a valid WebAssembly module"), "\(check.stderr)")

        let handleless = WasmFixture.hello().replacingOccurrences(of: #"(func (export "xcallback_handle")"#, with: #"(func (export "handle")"#)
        let path = try WasmFixture.install(handleless, as: "handleless", in: fixture.plugins)
        let refused = try xcallback(["check", path])
        #expect(!refused.status.isSuccess)
        #expect(refused.stderr.contains("handleless.wasm") && refused.stderr.contains("xcallback_handle"), "\(refused.stderr)")
    }
}
#endif
