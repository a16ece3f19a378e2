import CHostSupport
import Logging
import Testing
@testable import XCallbackBridge
@testable import XCallbackHost
import XCallbackSandbox
@testable import XCallbackSystem
import XCallbackURL
@testable import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `WorkerEndpoint` and the `WorkerProcess` it drives, against a fake
/// worker: the test's own thread speaks the wire on the far end of the
/// socketpair, and a `sleep` child stands in for the worker's process (the
/// host reaps and signals a real child; no plug-in is loaded). When the
/// stand-in dies, the fake's socket closes, as a worker's would.
@Suite("Worker endpoint")
struct WorkerEndpointTests {
    final class FakeWorker: Sendable {
        let pid: pid_t
        private let pidfd: Int32
        let hostEnd: Int32
        private let workerEnd: Int32
        /// Frames the host sent, in order.
        let received = EventLog<WorkerFrame>()
        /// "process ended" once the stand-in died, then "socket closed" once
        /// the host closed its end.
        let ended = EventLog<String>()

        init() throws {
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                throw TestFailure("socketpair: \(errno)")
            }
            hostEnd = ends[0]
            workerEnd = ends[1]
            let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(devNull) }
            // In a session (so a process group) of its own, as a worker is:
            // the host ends the group when the worker exits.
            guard case .success(let pid) = HostChild.spawn("/bin/sleep", arguments: ["300"], stdout: devNull, stderr: devNull,
                                                           placing: [], environment: { _ in false })
            else { throw TestFailure("cannot start /bin/sleep") }
            self.pid = pid
            // Signals go through a pidfd: once the host reaped the pid, it
            // may name another process.
            pidfd = xcallback_pidfd_open(pid)
            guard pidfd >= 0 else { throw TestFailure("pidfd_open: \(errno)") }
            start()
        }

        deinit {
            close(workerEnd)
            close(pidfd)
        }

        private func start() {
            let processEnded = ConditionLock(false)
            // The stand-in died: the worker's end of the socket goes with it.
            Threads.detach { [self] in
                var event = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                while poll(&event, 1, -1) < 0 && errno == EINTR {}
                ended.append("process ended")
                shutdown(workerEnd, Int32(SHUT_RDWR))
                processEnded.withLock { $0 = true }
                processEnded.broadcast()
            }
            // Reads what the host sends until the socket closes; holds `self`
            // (and so the descriptors) until the process is gone.
            Threads.detach { [self] in
                let reader = FrameReader(descriptor: workerEnd)
                while case .frame(let frame) = reader.next(beforeBlocking: {}) { received.append(frame) }
                processEnded.wait(until: { $0 }, deadline: MonotonicClock.now + 400_000_000_000) { _ in }
                ended.append("socket closed")
            }
        }

        /// Writes `frames` as the worker; never waits (the socket has room
        /// for a few frames, or this fails).
        @discardableResult
        func send(_ frames: WorkerFrame...) -> Bool {
            var bytes: [UInt8] = []
            for frame in frames { frame.encode(into: &bytes) }
            let sent = Glibc.send(workerEnd, bytes, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            return sent == bytes.count
        }

        /// The worker dies (a crash, as the host sees it).
        func kill() { _ = xcallback_pidfd_signal(pidfd, SIGKILL, 0) }

        /// Kills the stand-in and waits (bounded) until the host let go of it.
        func finish() async {
            kill()
            let events = await ended.waitAsync { $0.contains("socket closed") }
            #expect(events.contains("socket closed"), "the fake worker never ended")
        }

        /// The ids of the requests received, in order.
        var requests: [(id: UInt64, handler: UInt32, fields: RequestFields)] {
            received.all.compactMap { frame -> (id: UInt64, handler: UInt32, fields: RequestFields)? in
                if case .request(let id, let handler, let fields) = frame { return (id, handler, fields) }
                return nil
            }
        }
    }

    /// Calls and what they were given.
    final class Calls: Sendable {
        let results = EventLog<(name: String, result: HandlerResult)>()

        func call(_ name: String) -> HandlerCall {
            HandlerCall { [results] result in results.append((name, result)) }
        }

        func result(_ name: String) -> HandlerResult? { results.all.first { $0.name == name }?.result }

        func waitFor(_ names: String...) async {
            let got = await results.waitAsync { events in names.allSatisfy { name in events.contains { $0.name == name } } }
            for name in names where !got.contains(where: { $0.name == name }) { Issue.record("\(name) was never answered") }
        }
    }

    static let spawner = WorkerSpawner(output: WorkerOutputRelay(logger: quietLogger))
    static let quietLogger: Logger = {
        var logger = Logger(label: "worker-endpoint-tests")
        logger.logLevel = .critical
        return logger
    }()

    static func endpoint(_ fake: FakeWorker) -> WorkerEndpoint {
        // Paths that do not exist: a restart fails, and disables the plug-in.
        let info = PluginInfo(path: "/nonexistent/xcallback-tests/fake.so", name: "fake", version: "1", summary: "",
                              abiMajor: 1, abiMinor: 0)
        let worker = WorkerProcess(pid: fake.pid, socket: fake.hostEnd, progress: nil, sandbox: nil, supervisor: nil,
                                   reader: FrameReader(descriptor: fake.hostEnd), parent: .host,
                                   ready: .init(info: info, routes: ["fake://x-callback-url/a"]))
        return WorkerEndpoint(first: worker, executable: "/nonexistent/xcallback-tests/xcallback", security: FileSecurity(),
                              sandboxing: WorkerSandboxing(mode: .off, kernel: KernelSupport(landlockABI: nil, seccomp: false)),
                              takenRoutes: { [] }, spawner: spawner, policy: RestartPolicy(), logger: quietLogger)
    }

    static func fields(_ number: UInt64) -> RequestFields {
        RequestFields(url: "fake://x-callback-url/a?n=\(number)", scheme: "fake", source: "tests",
                      parameters: [QueryParameter("n", "\(number)")], arguments: [], id: number, attempt: 1)
    }

    static func success(_ value: String) -> HandlerResult {
        .outcome(Outcome(kind: .success, parameters: [QueryParameter("v", value)]))
    }

    static func errorCode(_ result: HandlerResult?) -> String? {
        guard case .outcome(let outcome) = result else { return nil }
        return outcome.value("errorCode")
    }

    /// Hands `endpoint` a request, from a thread of the test's own (a send
    /// never waits for the worker, but it is the host's thread that sends).
    static func invoke(_ endpoint: WorkerEndpoint, _ handler: Int, _ fields: RequestFields, _ call: HandlerCall) async {
        _ = await awaitOwnThread { endpoint.invoke(handler: handler, request: fields, call: call) }
    }

    @Test("a request reaches the worker as a frame; its answer reaches the request's call")
    func requestAndAnswer() async throws {
        let fake = try FakeWorker()
        let endpoint = Self.endpoint(fake)
        let calls = Calls()
        await Self.invoke(endpoint, 0, Self.fields(7), calls.call("a"))
        _ = await fake.received.waitAsync { !$0.isEmpty }
        let request = try #require(fake.requests.first)
        #expect(request.handler == 0)
        #expect(request.fields == Self.fields(7))
        #expect(fake.send(.result(id: request.id, result: Self.success("seven"))))
        await calls.waitFor("a")
        #expect(calls.result("a") == Self.success("seven"))
        await fake.finish()
    }

    @Test("pipelined requests answered in any order each reach their own call; a late duplicate answer is dropped")
    func pipelinedOutOfOrder() async throws {
        let fake = try FakeWorker()
        let endpoint = Self.endpoint(fake)
        let calls = Calls()
        for number in 0..<20 { await Self.invoke(endpoint, number % 3, Self.fields(UInt64(number)), calls.call("\(number)")) }
        _ = await fake.received.waitAsync { $0.count >= 20 }
        let requests = fake.requests
        #expect(requests.count == 20)
        #expect(requests.map(\.fields.id) == (0..<20).map(UInt64.init), "sent in the order invoked")
        #expect(requests.map(\.handler) == (0..<20).map { UInt32($0 % 3) })
        for request in requests.reversed() {
            #expect(fake.send(.result(id: request.id, result: Self.success("\(request.fields.id)"))))
        }
        // Answered twice: the second finds no one waiting.
        #expect(fake.send(.result(id: requests[0].id, result: Self.success("again"))))
        await calls.waitFor("0", "19")
        let all = await calls.results.waitAsync { $0.count >= 20 }
        for number in 0..<20 { #expect(calls.result("\(number)") == Self.success("\(number)")) }
        #expect(all.count == 20)
        await fake.finish()
    }

    @Test("the worker dies with requests in flight: each gets PluginCrashed; a restart that fails disables the plug-in")
    func crashWithRequestsInFlight() async throws {
        let fake = try FakeWorker()
        let endpoint = Self.endpoint(fake)
        let calls = Calls()
        for name in ["a", "b", "c"] { await Self.invoke(endpoint, 0, Self.fields(1), calls.call(name)) }
        _ = await fake.received.waitAsync { $0.count >= 3 }
        fake.kill()
        await calls.waitFor("a", "b", "c")
        for name in ["a", "b", "c"] { #expect(Self.errorCode(calls.result(name)) == "PluginCrashed", "\(name)") }
        guard case .outcome(let crashed) = calls.result("a") else { return }
        #expect(crashed.value("errorMessage")?.contains("SIGKILL") == true)

        // The restart cannot start the (nonexistent) worker file: refused from now on.
        await Self.invoke(endpoint, 0, Self.fields(2), calls.call("after"))
        await calls.waitFor("after")
        #expect(Self.errorCode(calls.result("after")) == "PluginUnavailable")
        let ended = await fake.ended.waitAsync { $0.contains("socket closed") }
        #expect(ended.contains("socket closed"))
    }

    @Test("a request the host gave up on before it went out is never sent")
    func abandonedBeforeSending() async throws {
        let fake = try FakeWorker()
        let endpoint = Self.endpoint(fake)
        let calls = Calls()
        let late = calls.call("late")
        late.abandon()  // timed out while it waited for a worker
        await Self.invoke(endpoint, 0, Self.fields(1), late)
        await Self.invoke(endpoint, 0, Self.fields(2), calls.call("live"))
        _ = await fake.received.waitAsync { !$0.isEmpty }
        let requests = fake.requests
        #expect(requests.map(\.fields.id) == [2], "the abandoned request reached the worker")
        if let live = requests.first { #expect(fake.send(.result(id: live.id, result: Self.success("ok")))) }
        await calls.waitFor("live")
        #expect(calls.result("late") == nil)
        await fake.finish()
    }

    @Test("a timed-out request whose handler returned keeps the worker; one whose handler never returned replaces it")
    func hungHandlerReplacesWorker() async throws {
        let fake = try FakeWorker()
        let endpoint = Self.endpoint(fake)
        let calls = Calls()
        let returning = calls.call("returning")
        await Self.invoke(endpoint, 0, Self.fields(1), calls.call("first"))
        await Self.invoke(endpoint, 0, Self.fields(2), returning)
        _ = await fake.received.waitAsync { $0.count >= 2 }
        let sent = fake.requests
        try #require(sent.count == 2)
        // The handler of the second returned (it completes later); the
        // first is answered after that, so once it is, both were read.
        #expect(fake.send(.returned(id: sent[1].id), .result(id: sent[0].id, result: Self.success("1"))))
        await calls.waitFor("first")
        returning.abandon()  // its deadline: not a hang

        await Self.invoke(endpoint, 0, Self.fields(3), calls.call("third"))
        _ = await fake.received.waitAsync { $0.count >= 3 }
        #expect(fake.requests.map(\.fields.id) == [1, 2, 3], "the worker was replaced for a handler that returned")
        if let third = fake.requests.last { #expect(fake.send(.result(id: third.id, result: Self.success("3")))) }
        await calls.waitFor("third")
        #expect(fake.ended.count == 0)

        // This one's handler never returns: at its deadline the worker is
        // hung, retired, and (nothing else in flight) killed.
        let hung = calls.call("hung")
        await Self.invoke(endpoint, 0, Self.fields(4), hung)
        _ = await fake.received.waitAsync { $0.count >= 4 }
        _ = await awaitOwnThread { hung.abandon() }
        let ended = await fake.ended.waitAsync { $0.contains("socket closed") }
        #expect(ended.first == "process ended", "the hung worker was not stopped")
        // Its replacement cannot start here: the plug-in is disabled.
        await Self.invoke(endpoint, 0, Self.fields(5), calls.call("after"))
        await calls.waitFor("after")
        #expect(Self.errorCode(calls.result("after")) == "PluginUnavailable")
    }

    @Test("shutdown asks the worker to finish: a shutdown frame after the requests; it answers them, then exits")
    func shutdownAfterRequests() async throws {
        let fake = try FakeWorker()
        let endpoint = Self.endpoint(fake)
        let calls = Calls()
        await Self.invoke(endpoint, 0, Self.fields(1), calls.call("a"))
        _ = await awaitOwnThread { endpoint.shutdown() }
        let frames = await fake.received.waitAsync { $0.count >= 2 }
        #expect(frames.count == 2)
        #expect(frames.last == .shutdown)
        if let request = fake.requests.first { #expect(fake.send(.result(id: request.id, result: Self.success("done")))) }
        await calls.waitFor("a")
        #expect(calls.result("a") == Self.success("done"))
        fake.kill()  // its exit after the shutdown hook
        let exited = await awaitOwnThread { () -> Bool in
            endpoint.waitForExit(until: MonotonicClock.now + 60_000_000_000)
            return true
        }
        #expect(exited == true)
        let ended = await fake.ended.waitAsync { $0.contains("socket closed") }
        #expect(ended.contains("socket closed"))
    }
}
