import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Client correlation (issue 10): `call --via-open` sends a request to
/// another program with callbacks that point back at the host, and the
/// host's built-in `await` / `response` actions pair the answer with the
/// waiting call. The other program is a stand-in sh script that answers
/// like an x-callback app, by sending its callback to the host's FIFO.
@Suite("Client correlation", .ownThreads)
struct CorrelationTests {
    // MARK: call --via-open

    @Test("via-open: the other program's success, error and cancel come back as the call's record",
          .scaledTimeLimit(minutes: 1))
    func answers() throws {
        let host = try CorrelationHost()
        let app = try StandInApp(in: host.fixture.scratch, fifo: host.fifo)

        let success = try host.callViaOpen("standin://x-callback-url/answer?q=hello", app: app)
        #expect(success.status == .exited(0), "stderr: \(success.stderr)")
        #expect(success.lines == ["success?result=42&echo=hello"])

        let failure = try host.callViaOpen("standin://x-callback-url/fail", app: app)
        #expect(failure.status == .exited(1), "stderr: \(failure.stderr)")
        #expect(failure.lines == ["error?errorCode=Refused&errorMessage=not%20today&errorDomain=standin"])

        let cancel = try host.callViaOpen("standin://x-callback-url/cancel#part", app: app)
        #expect(cancel.status == .exited(2), "stderr: \(cancel.stderr)")
        #expect(cancel.lines == ["cancel"])

        // What the app was opened with: its own URL, kept, plus x-source and
        // three callbacks to the host's response action with one fresh ID.
        let opened = app.openedURLs
        try #require(opened.count == 3, "opened: \(opened)")
        #expect(opened[0].hasPrefix("standin://x-callback-url/answer?q=hello&x-source=xcallback&x-success="))
        #expect(opened[2].hasSuffix("#part"), "a fragment stays last: \(opened[2])")
        var ids: [String] = []
        for url in opened {
            let parameters = Dictionary(recordParameters(url).map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
            #expect(parameters["x-source"] == "xcallback")
            let success = try #require(parameters["x-success"])
            let id = String(success.dropFirst("xcallback://x-callback-url/response?requestID=".count).prefix(32))
            #expect(id.count == 32 && id.allSatisfy(\.isHexDigit), "request ID: \(id)")
            for type in ["success", "error", "cancel"] {
                #expect(parameters["x-\(type)"] == "xcallback://x-callback-url/response?requestID=\(id)&responseType=\(type)")
            }
            ids.append(id)
        }
        #expect(Set(ids).count == 3, "every call has its own ID")

        // Each response line the app sent got its own record on the FIFO's output.
        #expect(host.child.waitForStdoutLines(3), "host stdout: \(host.child.stdout)")
        #expect(Set(host.child.stdoutLines) == Set(ids.map { "success?requestID=\($0)" }))
        try host.stop()
    }

    @Test("via-open: no answer within --timeout → exit 4; an opener that fails or cannot start → exit 5",
          .scaledTimeLimit(minutes: 1))
    func timeoutsAndOpenerFailures() throws {
        let host = try CorrelationHost()
        let app = try StandInApp(in: host.fixture.scratch, fifo: host.fifo)

        let silent = try host.callViaOpen("standin://x-callback-url/ignore", app: app, extra: ["--timeout", "0.5"])
        #expect(silent.status == .exited(4), "stderr: \(silent.stderr)")
        #expect(silent.stderr.contains("no response to request"), "stderr: \(silent.stderr)")
        #expect(silent.lines.count == 1)
        #expect(silent.lines.first?.hasPrefix("error?errorCode=Timeout&") == true, "stdout: \(silent.stdout)")

        // The opener fails: `call` answers the host's await itself, so the
        // record it prints comes from the host, and nothing lingers there.
        let broken = try host.callViaOpen("standin://x-callback-url/crash", app: app)
        #expect(broken.status == .exited(5), "stderr: \(broken.stderr)")
        #expect(broken.stderr.contains("exited with status 3"), "stderr: \(broken.stderr)")
        #expect(broken.lines.count == 1)
        #expect(broken.lines.first?.hasPrefix("error?errorCode=OpenFailed&") == true, "stdout: \(broken.stdout)")

        let missing = try xcallback(["call", "--via-open", "--open", host.fixture.scratch.file("no-such-opener"),
                                     "--socket", host.socket, "standin://x-callback-url/answer"])
        #expect(missing.status == .exited(5), "stderr: \(missing.stderr)")
        #expect(missing.stderr.contains("cannot run"), "stderr: \(missing.stderr)")

        let noHost = try xcallback(["call", "--via-open", "--open", app.script, "--socket",
                                    host.fixture.scratch.file("none.sock"), "standin://x-callback-url/answer"])
        #expect(noHost.status == .exited(3), "stderr: \(noHost.stderr)")
        #expect(app.openedURLs.count == 2, "nothing is opened when no host can take the answer")
        try host.stop()
    }

    @Test("via-open refuses a URL that already names a callback, and --open / --timeout without --via-open")
    func refusals() throws {
        let scratch = try Scratch()
        let socket = scratch.file("none.sock")
        for callback in ["x-success", "x-error", "x-cancel"] {
            let refused = try xcallback(["call", "--via-open", "--socket", socket,
                                         "standin://x-callback-url/answer?q=1&\(callback)=app%3A%2F%2Fmine"])
            #expect(refused.status != .exited(0))
            #expect(refused.status != .exited(3), "refused before any connection")
            #expect(refused.stderr.contains("already names \(callback)"), "stderr: \(refused.stderr)")
            #expect(refused.stdout.isEmpty)
        }
        let stray = try xcallback(["call", "--open", "true", "--socket", socket, "calc://x-callback-url/add"])
        #expect(stray.status != .exited(0))
        #expect(stray.stderr.contains("--via-open"), "stderr: \(stray.stderr)")
    }

    // MARK: the built-in actions

    @Test("response and await: malformed parameters are ParameterError; an unknown ID is UnknownRequestID",
          .scaledTimeLimit(minutes: 1))
    func builtInErrors() throws {
        let host = try CorrelationHost(output: "jsonl")
        let base = "xcallback://x-callback-url/"
        let lines = [
            base + "response?requestID=0123456789abcdef&responseType=success&result=1",
            base + "response?requestID=short&responseType=success",
            base + "response?requestID=has%20space%20in%20it&responseType=success",
            base + "response?responseType=success",
            base + "response?requestID=0123456789abcdef",
            base + "response?requestID=0123456789abcdef&responseType=maybe",
            base + "await?requestID=0123456789abcdef&timeout=0",
            base + "await?requestID=0123456789abcdef&timeout=soon",
            base + "await?requestID=0123456789abcdef&timeout=86401",
            base + "nothing?requestID=0123456789abcdef",
        ]
        let records = try exchangeOverSocket(host.socket, lines: lines, timeout: 20).map { try Record(jsonLine: $0) }
        let byInput = Dictionary(records.map { ($0.input ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        #expect(records.count == lines.count)
        #expect(byInput[lines[0]]?.errorCode == "UnknownRequestID", "\(records)")
        #expect(byInput[lines[0]]?.errorDomain == "xcallback")
        for line in lines[1...8] {
            #expect(byInput[line]?.errorCode == "ParameterError", "\(line): \(String(describing: byInput[line]))")
        }
        #expect(byInput[lines[2]]?.params["errorMessage"]?.contains("A-Z") == true)
        #expect(byInput[lines[9]]?.errorCode == "NotFoundAction")
        try host.stop()
    }

    @Test("await: a second await for the same ID is DuplicateRequestID; a repeated response is UnknownRequestID at once",
          .scaledTimeLimit(minutes: 1))
    func duplicatesAndRepeats() throws {
        let host = try CorrelationHost()
        let id = "dup0123456789abc"
        // One connection: its lines are dispatched in order, so the first
        // await is registered when the second arrives.
        let waiting = try LineSocket(host.socket, lines: [
            "xcallback://x-callback-url/await?requestID=\(id)&timeout=20",
            "xcallback://x-callback-url/await?requestID=\(id)",
        ])
        let duplicate = try waiting.nextLine()
        #expect(duplicate.hasPrefix("error?errorCode=DuplicateRequestID&"), "\(duplicate)")

        let response = "xcallback://x-callback-url/response?requestID=\(id)&responseType=success&result=1"
        #expect(try exchangeOverSocket(host.socket, lines: [response]) == ["success?requestID=\(id)"])
        #expect(try waiting.remainingLines() == ["success?result=1"])

        // Told at once: a response still waiting for its await says only "no call is waiting".
        let repeated = try exchangeOverSocket(host.socket, lines: [response])
        #expect(repeated.count == 1)
        #expect(repeated.first?.hasPrefix("error?errorCode=UnknownRequestID&") == true, "\(repeated)")
        #expect(repeated.first?.contains("already%20answered") == true, "\(repeated)")
        try host.stop()
    }

    @Test("a response read before its await is kept a moment and paired with it", .scaledTimeLimit(minutes: 1))
    func responseBeforeAwait() throws {
        let host = try CorrelationHost()
        let id = "early0123456789a"
        let early = try sendOverSocket(host.socket, lines: [
            "xcallback://x-callback-url/response?requestID=\(id)&responseType=error&errorCode=E&errorMessage=m&errorDomain=d",
        ])
        defer { close(early) }
        let awaited = try exchangeOverSocket(host.socket, lines: ["xcallback://x-callback-url/await?requestID=\(id)&timeout=20"])
        #expect(awaited == ["error?errorCode=E&errorMessage=m&errorDomain=d"])
        #expect(try readAnswers(early, from: host.socket) == ["success?requestID=\(id)"])
        try host.stop()
    }

    @Test("chains: a plug-in's callback to the response action answers the await", .scaledTimeLimit(minutes: 1))
    func chainAnswersAwait() throws {
        let host = try CorrelationHost()
        let id = "chain0123456789a"
        let waiting = try sendOverSocket(host.socket, lines: ["xcallback://x-callback-url/await?requestID=\(id)&timeout=20"])
        defer { close(waiting) }
        let callback = "xcallback://x-callback-url/response?requestID=\(id)&responseType=success"
        let chain = try exchangeOverSocket(host.socket, lines: [
            "calc://x-callback-url/add?lhs=40&rhs=2&x-success=\(percentEncoded(callback))",
        ])
        #expect(chain == ["success?requestID=\(id)"], "the chain ends in the response's own record")
        #expect(try readAnswers(waiting, from: host.socket) == ["success?result=42"])
        try host.stop()
    }

    @Test("a pending await ends at once with Timeout when the host stops", .scaledTimeLimit(minutes: 1))
    func awaitEndsOnStop() throws {
        let host = try CorrelationHost(extra: ["--log-level", "debug"])
        let id = "stop0123456789ab"
        let waiting = try sendOverSocket(host.socket, lines: ["xcallback://x-callback-url/await?requestID=\(id)"])
        defer { close(waiting) }
        #expect(host.child.waitForStderr(containing: "awaiting the response to request \(id)"), "stderr: \(host.child.stderr)")
        host.child.send(signal: SIGTERM)
        let answer = try readAnswers(waiting, from: host.socket)
        #expect(answer.count == 1)
        #expect(answer.first?.hasPrefix("error?errorCode=Timeout&") == true, "\(answer)")
        #expect(answer.first?.contains("stopping") == true, "\(answer)")
        #expect(host.child.waitForExit(timeout: 10) == .exited(0), "stderr: \(host.child.stderr)")
    }

    @Test("plug-ins cannot take routes on the host's own scheme")
    func reservedScheme() throws {
        let fixture = try HostFixture(["Calculator"])
        let manifest = """
            name = "sneaky"
            version = "1.0.0"
            description = "binds libm on the host's scheme"
            library = "libm.so.6"
            scheme = "xcallback"

            [[function]]
            declaration = "double cbrt(double x)"
            """
        try Data(manifest.utf8).write(to: URL(fileURLWithPath: fixture.plugins + "/sneaky.xcallback.toml"))
        let listing = try xcallback(["plugins", "--plugins", fixture.plugins])
        #expect(listing.stdout.contains("reserved"), "plugins: \(listing.stdout)")
        let result = try fixture.run(lines: ["xcallback://x-callback-url/cbrt?x=27", "calc://x-callback-url/add?lhs=1&rhs=1"])
        #expect(result.status == .exited(0))
        #expect(result.lines.count == 2)
        #expect(result.lines.first?.hasPrefix("error?errorCode=NotFoundAction&") == true, "\(result.lines)")
        #expect(result.lines.last == "success?result=2")
        #expect(result.stderr.contains("reserved for the host's built-in routes"), "stderr: \(result.stderr)")
    }
}

// MARK: - Support

/// A host reading a FIFO and a socket at once (the desktop flow: answers
/// come through the FIFO, `call` waits on the socket).
private final class CorrelationHost {
    let fixture: HostFixture
    let fifo: String
    let socket: String
    let child: ChildProcess

    init(output: String = "url", extra: [String] = []) throws {
        fixture = try HostFixture(["Calculator"])
        fifo = fixture.scratch.file("host.fifo")
        socket = fixture.scratch.file("host.sock")
        child = try fixture.start(["--fifo", fifo, "--socket", socket, "--output", output] + extra, stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")
        try #require(waitForSocketListener(socket, host: child), "stderr: \(child.stderr)")
    }

    func callViaOpen(_ url: String, app: StandInApp, extra: [String] = []) throws -> RunResult {
        try xcallback(["call", "--via-open", "--open", app.script, "--socket", socket] + extra + [url])
    }

    func stop(sourceLocation: SourceLocation = #_sourceLocation) throws {
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)", sourceLocation: sourceLocation)
        #expect(!looksLikeACrash(child.stderr), sourceLocation: sourceLocation)
    }
}

/// A stand-in for another x-callback app: a sh script that notes the URL it
/// is opened with and answers as its action says, by opening (sending to the
/// host's FIFO, as a desktop handler would) the callback the URL gave it.
/// `answer` → x-success with `result=42` and its `q`; `fail` → x-error;
/// `cancel` → x-cancel; `ignore` → never answers; anything else → exit 3.
private struct StandInApp {
    let script: String
    let log: String

    init(in scratch: Scratch, fifo: String) throws {
        script = scratch.file("standin-app")
        log = scratch.file("standin-opened.txt")
        let text = """
            #!/bin/sh
            printf '%s\\n' "$1" >> '\(log)'
            query=${1#*\\?}
            query=${query%%#*}
            # The first value of parameter $1, percent-decoded as far as the
            # host encodes its callback URLs.
            field() {
                printf '%s\\n' "$query" | tr '&' '\\n' | sed -n "s/^$1=//p" | head -n 1 |
                    sed -e 's/%3A/:/g' -e 's/%2F/\\//g' -e 's/%3F/?/g' -e 's/%3D/=/g' -e 's/%26/\\&/g' -e 's/%25/%/g'
            }
            answer() { exec '\(Products.xcallback)' send --fifo '\(fifo)' "$1"; }
            path=${1%%\\?*}
            case ${path##*/} in
                answer) answer "$(field x-success)&result=42&echo=$(field q)" ;;
                fail) answer "$(field x-error)&errorCode=Refused&errorMessage=not%20today&errorDomain=standin" ;;
                cancel) answer "$(field x-cancel)" ;;
                ignore) exit 0 ;;
                *) exit 3 ;;
            esac
            """
        try installScript(at: script, text + "\n")
    }

    /// The URLs the app was opened with, in order.
    var openedURLs: [String] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        return ChildProcess.lines(text)
    }
}

/// A socket connection whose records are read one at a time.
private final class LineSocket {
    let path: String
    let descriptor: Int32
    private var buffer: [UInt8] = []

    init(_ path: String, lines: [String]) throws {
        self.path = path
        descriptor = try sendOverSocket(path, lines: lines)
    }

    deinit { close(descriptor) }

    /// The next record, waiting at most `timeout` seconds for it.
    func nextLine(timeout: Double = 10) throws -> String {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                defer { buffer.removeSubrange(...newline) }
                return String(decoding: buffer[..<newline], as: UTF8.self)
            }
            guard try readMore(until: deadline) else { throw HarnessError("\(path) closed before a record") }
        }
    }

    /// Every record left, until the host closes the connection.
    func remainingLines(timeout: Double = 10) throws -> [String] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while try readMore(until: deadline) {}
        return ChildProcess.lines(String(decoding: buffer, as: UTF8.self))
    }

    /// Appends what the host sent next; false at the end of the connection.
    private func readMore(until deadline: Date) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(0, deadline.timeIntervalSinceNow * 1000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw HarnessError("nothing more from \(path) in time; have \(buffer.count) bytes") }
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
    }
}
