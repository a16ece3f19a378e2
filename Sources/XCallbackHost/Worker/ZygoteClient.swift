import CHostSupport
import XCallbackBridge
import Synchronization
import XCallbackSandbox
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's side of the worker zygote (`WorkerZygote`): asks it to fork
/// workers, and hears how they exit. Started, and asked, only from the
/// spawner thread; exits are waited for from any thread.
final class ZygoteClient: Sendable {
    let pid: pid_t
    /// The zygote's pidfd: the host's child, so its pid is the zygote's
    /// until the host reaps it; signalled through this all the same.
    private let pidfd: Int32
    private let control: Int32
    private let replies = ConditionLock(Replies())
    /// Forks asked for ahead of need (`prefork`).
    private let preforked = Lock<[PendingFork]>([])

    private struct Replies {
        var nextSerial: Int32 = 1
        /// Forks asked for and waited for; a late answer to one given up on
        /// is killed, not kept.
        var waiting: Set<Int32> = []
        var started: [Int32: Result<ForkedWorker, Errno>] = [:]
        /// Forked workers whose exit someone will ask for.
        var live: Set<Int32> = []
        var exits: [Int32: WorkerExit] = [:]
        /// It died (or closed its socket).
        var gone = false
        /// It missed a deadline: it forks nothing more, but still reports
        /// how the workers it forked end.
        var retired = false
    }

    struct Errno: Error {
        let code: Int32
    }

    /// How long a fork may take before the zygote is taken for stuck.
    static let forkDeadline: UInt64 = 10_000_000_000

    /// Set `XCALLBACK_WORKER_START=exec` to start each worker by executing
    /// `xcallback __worker` as before (sanitizer builds, comparisons).
    static var isWanted: Bool {
        getenv("XCALLBACK_WORKER_START").map { String(cString: $0) != "exec" } ?? true
    }

    /// Starts `executable __zygote`; nil when it cannot be started, or the
    /// kernel cannot keep workers off it (the host then executes each
    /// worker): signalling a process group through a pidfd needs Linux 6.9,
    /// and Landlock's signal scope, which keeps a worker's signals off the
    /// zygote and its group whatever the worker is granted, Linux 6.12.
    static func start(executable: String, output: WorkerOutputRelay) -> ZygoteClient? {
        guard xcallback_pidfd_group_signals_supported() != 0, (KernelSupport.probe().landlockABI ?? 0) >= 6 else { return nil }
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return nil
        }
        let (host, child) = (ends[0], ends[1])
        defer { close(child) }
        let arguments = [WorkerZygote.subcommand, "--parent", String(getpid()),
                         WorkerZygote.titleRoomOption, WorkerZygote.titleRoom]
        // What it prints is logged as a worker's is: it never holds the
        // host's stderr, which every worker forked from it would inherit.
        let streams = ChildStreams(output.open(label: "zygote", lingers: true))
        defer { streams.closeInHost() }
        // The environment of a worker with the default sandbox: a fork
        // copies the zygote's memory, its first environment included, into
        // every worker, so nothing a worker may not see may be there.
        let control = ChildDescriptors.Placement(descriptor: child, number: WorkerZygote.controlDescriptor)
        guard case .success(let pid) = HostChild.spawn(
            executable, arguments: arguments, stdout: streams.stdout, stderr: streams.stderr, placing: [control],
            environment: { SandboxEnvironment.passes($0, for: .default) })
        else {
            close(host)
            return nil
        }
        // Not reaped before `readReports` ends, so this names the zygote.
        let pidfd = xcallback_pidfd_open(pid)
        let client = ZygoteClient(pid: pid, pidfd: pidfd, control: host)
        Threads.detach { client.readReports() }
        return client
    }

    private init(pid: pid_t, pidfd: Int32, control: Int32) {
        self.pid = pid
        self.pidfd = pidfd
        self.control = control
    }

    /// Whether it still forks workers (it dies with a crash or a kill, and
    /// its workers with it; it is retired once it misses a deadline).
    var isAlive: Bool { replies.withLock { !$0.gone && !$0.retired } }

    /// Forks a worker with these arguments (after `__worker`), environment
    /// and descriptors (each `descriptor` lands on its `number`). They go
    /// to the child on a socket of its own, never through the zygote, and
    /// only once it is forked: a zygote that stalls past the deadline is
    /// killed, and a child forked late finds its setup socket closed.
    func fork(arguments: [String], environment: [String],
              placements: [ChildDescriptors.Placement]) -> Result<ForkedWorker, Errno> {
        let asked = preforked.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        let pending: PendingFork
        switch asked.map({ .success($0) }) ?? requestFork() {
        case .success(let fork): pending = fork
        case .failure(let error): return .failure(error)
        }
        let serial = pending.serial
        let answer = replies.wait(until: { $0.started[serial] != nil || $0.gone || $0.retired },
                                  deadline: pending.deadline) { replies in
            replies.waiting.remove(serial)
            return replies.started.removeValue(forKey: serial)
        }
        let worker: ForkedWorker
        switch answer {
        case .success(let forked)?: worker = forked
        case .failure(let error)?: return .failure(error)
        case nil:
            giveUp()
            return .failure(Errno(code: ETIMEDOUT))
        }
        // What the child reads, then end of input.
        var message = WorkerZygote.MessageWriter()
        message.words(placements.map { UInt32(bitPattern: $0.number) })
        message.strings(arguments)
        message.strings(environment)
        let deadline = MonotonicClock.now + Self.forkDeadline
        guard Self.write(message.bytes, descriptors: placements.map(\.descriptor), on: pending.setup, deadline: deadline) else {
            // It could not be told what to run: it ends at the end of its
            // input; nobody waits for it.
            worker.signal(SIGKILL)
            replies.withLock { _ = $0.live.remove(serial) }
            if MonotonicClock.now >= deadline { giveUp() }
            return .failure(Errno(code: EPIPE))
        }
        return .success(worker)
    }

    /// Asks for `count` forks at once, for a batch of workers about to
    /// start: the zygote makes them while the host prepares each worker
    /// (its file checked, its sandbox planned), and `fork` takes them
    /// first. Each child waits for its setup; `dropPreforked` ends those
    /// the batch did not use.
    func prefork(count: Int) {
        for _ in 0..<count {
            guard case .success(let pending) = requestFork() else { return }
            preforked.withLock { $0.append(pending) }
        }
    }

    /// Ends the forks `prefork` asked for and `fork` did not use: each child
    /// finds its setup socket closed and exits; one already reported is
    /// killed too.
    func dropPreforked() {
        let unused = preforked.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        guard !unused.isEmpty else { return }
        let reported = replies.withLock { replies -> [ForkedWorker] in
            unused.compactMap { pending in
                replies.waiting.remove(pending.serial)
                replies.live.remove(pending.serial)
                return try? replies.started.removeValue(forKey: pending.serial)?.get()
            }
        }
        for worker in reported { worker.signal(SIGKILL) }
    }

    /// Sends the zygote one start request, with the child's end of a fresh
    /// setup socket.
    private func requestFork() -> Result<PendingFork, Errno> {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return .failure(Errno(code: errno))
        }
        let (setup, child) = (ends[0], ends[1])
        // Only the host's end: the child reads its end blocking.
        _ = fcntl(setup, F_SETFL, fcntl(setup, F_GETFL) | O_NONBLOCK)
        let serial = replies.withLock { replies -> Int32 in
            defer { replies.nextSerial &+= 1 }
            replies.waiting.insert(replies.nextSerial)
            return replies.nextSerial
        }
        let pending = PendingFork(setup: setup, serial: serial, deadline: MonotonicClock.now + Self.forkDeadline)
        let request: [UInt32] = [WorkerZygote.startRequest, UInt32(bitPattern: serial)]
        var childEnd = [child]
        let asked = request.withUnsafeBytes { bytes in
            xcallback_send_with_descriptors(control, bytes.baseAddress, UInt(bytes.count), &childEnd, 1)
        }
        let askError = errno
        close(child)
        guard asked == 0 else {
            replies.withLock { _ = $0.waiting.remove(serial) }
            return .failure(Errno(code: askError))
        }
        return .success(pending)
    }

    /// The zygote did not answer in time (stopped, frozen, starved): the
    /// next worker gets a new one. It is not killed, for its workers would
    /// die with it; a child it forks late finds its setup socket closed and
    /// exits, and the host kills it on sight (`readReports`).
    private func giveUp() {
        replies.withLock { $0.retired = true }
        replies.broadcast()
    }

    /// Sends `bytes` with `descriptors` on the non-blocking `socket` by
    /// `deadline`; false if it could not.
    private static func write(_ bytes: [UInt8], descriptors: [Int32], on socket: Int32, deadline: UInt64) -> Bool {
        var descriptors = descriptors
        var offset = 0
        while offset < bytes.count {
            // The descriptors ride on the first byte; the rest is a stream.
            let written: Int = bytes.withUnsafeBytes { buffer in
                if offset == 0 {
                    return xcallback_send_with_descriptors(socket, buffer.baseAddress, 1, &descriptors,
                                                           Int32(descriptors.count)) == 0 ? 1 : -1
                }
                return send(socket, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                offset += written
                continue
            }
            guard errno == EAGAIN || errno == EINTR else { return false }
            let now = MonotonicClock.now
            guard now < deadline else { return false }
            var ready = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            _ = poll(&ready, 1, Int32(min((deadline - now) / 1_000_000 + 1, 1000)))
        }
        return true
    }

    /// Waits (up to `timeout` seconds) for how the worker forked as
    /// `serial` ended; nil if the zygote died first (the worker died with
    /// it) or did not say.
    func exit(of serial: Int32, timeout: Double = 10) -> WorkerExit? {
        let deadline = MonotonicClock.now + UInt64(timeout * 1e9)
        return replies.wait(until: { $0.exits[serial] != nil || $0.gone }, deadline: deadline) { replies in
            replies.live.remove(serial)
            return replies.exits.removeValue(forKey: serial)
        }
    }

    private func readReports() {
        var words: [Int32] = [0, 0, 0, 0]
        while true {
            var workerPidfd: Int32 = -1
            var count: Int32 = 0
            let length = words.withUnsafeMutableBytes {
                xcallback_receive_with_descriptors(control, $0.baseAddress, UInt($0.count), &workerPidfd, 1, &count)
            }
            if length < 0 && errno == EINTR { continue }
            guard length == 16 else {
                if count == 1 { close(workerPidfd) }
                break
            }
            let (kind, serial, value) = (WorkerZygote.Report(rawValue: words[0]), words[1], words[2])
            let started: ForkedWorker? = kind == .started && count == 1
                ? ForkedWorker(pid: value, pidfd: workerPidfd, serial: serial, zygote: self) : nil
            if count == 1 && started == nil { close(workerPidfd) }
            replies.withLock { replies in
                switch kind {
                case .started where replies.waiting.contains(serial):
                    replies.started[serial] = started.map { .success($0) } ?? .failure(Errno(code: EBADF))
                    if started != nil { replies.live.insert(serial) }
                case .started:
                    // Given up on: it never got its setup, so it is ending.
                    started?.signal(SIGKILL)
                case .failed where replies.waiting.contains(serial):
                    replies.started[serial] = .failure(Errno(code: value))
                case .exited where replies.live.contains(serial):
                    replies.exits[serial] = WorkerExit(status: value, peakResidentKiB: Int(words[3]))
                case .failed, .exited, nil:
                    break
                }
            }
            replies.broadcast()
        }
        replies.withLock { $0.gone = true }
        replies.broadcast()
        // Reap the zygote itself (a child of the host).
        _ = WorkerExit.wait(for: pid)
    }

    deinit {
        if pidfd >= 0 { close(pidfd) }
        close(control)
    }
}

/// A fork the zygote was asked for: the host's end of the child's setup
/// socket (closing it ends a child that was never told what to run), its
/// serial, and by when the zygote must have forked it.
final class PendingFork: Sendable {
    let setup: Int32
    let serial: Int32
    let deadline: UInt64

    init(setup: Int32, serial: Int32, deadline: UInt64) {
        self.setup = setup
        self.serial = serial
        self.deadline = deadline
    }

    deinit { close(setup) }
}

/// A worker the zygote forked, as the host holds it: its pidfd, which
/// names the process itself rather than a number that can be reused.
///
/// The pidfd is closed as soon as the worker's exit is known (`close`),
/// not when the last reference goes: whatever still holds the worker then
/// (a log line, a closure) must not hold a descriptor of the host's. Every
/// use takes the lock, so none can reach a number closed and reused since.
final class ForkedWorker: Sendable {
    let pid: pid_t
    let serial: Int32
    let zygote: ZygoteClient
    /// -1 once closed.
    private let pidfd: Mutex<Int32>

    init(pid: pid_t, pidfd: Int32, serial: Int32, zygote: ZygoteClient) {
        self.pid = pid
        self.pidfd = Mutex(pidfd)
        self.serial = serial
        self.zygote = zygote
    }

    /// Signals the worker (`group`: its process group); nothing once closed.
    func signal(_ signal: Int32, group: Bool = false) {
        pidfd.withLock { pidfd in
            guard pidfd >= 0 else { return }
            _ = xcallback_pidfd_signal(pidfd, signal, group ? 1 : 0)
        }
    }

    /// Waits up to `milliseconds` for the worker to exit (at once if
    /// closed); whether it is seen to have exited.
    @discardableResult
    func waitForExit(milliseconds: Int32) -> Bool {
        // Polled on a duplicate, outside the lock: a signal must not wait
        // for this, and `close` must not close the number being polled.
        let copy = pidfd.withLock { $0 >= 0 ? fcntl($0, F_DUPFD_CLOEXEC, 0) : -1 }
        guard copy >= 0 else { return false }
        defer { Glibc.close(copy) }
        var event = pollfd(fd: copy, events: Int16(POLLIN), revents: 0)
        while poll(&event, 1, milliseconds) < 0 && errno == EINTR {}
        return event.revents & Int16(POLLIN) != 0
    }

    /// Hands `writer` a copy of the pidfd (it keeps its own), under the
    /// lock, so it never copies a number closed and reused.
    func handPidfd(to writer: ScratchWriter?) {
        pidfd.withLock { pidfd in
            if pidfd >= 0 { writer?.started(pidfd: pidfd) }
        }
    }

    /// The worker has been reaped: its pidfd is of no more use.
    func close() {
        pidfd.withLock { pidfd in
            if pidfd >= 0 { Glibc.close(pidfd) }
            pidfd = -1
        }
    }

    deinit { close() }
}
