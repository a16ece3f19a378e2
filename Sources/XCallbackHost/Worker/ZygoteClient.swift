import CHostSupport
import XCallbackSandbox

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
    private let control: Int32
    private let replies = ConditionLock(Replies())

    private struct Replies {
        var nextSerial: Int32 = 1
        var started: [Int32: Result<ForkedWorker, Errno>] = [:]
        var exits: [Int32: Int32] = [:]
        var gone = false
    }

    struct Errno: Error {
        let code: Int32
    }

    /// Set `XCALLBACK_WORKER_START=exec` to start each worker by executing
    /// `xcallback __worker` as before (sanitizer builds, comparisons).
    static var isWanted: Bool {
        getenv("XCALLBACK_WORKER_START").map { String(cString: $0) != "exec" } ?? true
    }

    /// Starts `executable __zygote`; nil when it cannot be started, or when
    /// this kernel cannot signal a process group through a pidfd (before
    /// 6.9): the host then executes each worker.
    static func start(executable: String) -> ZygoteClient? {
        guard xcallback_pidfd_group_signals_supported() != 0 else { return nil }
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return nil
        }
        let (host, child) = (ends[0], ends[1])
        defer { close(child) }
        let arguments: [UnsafeMutablePointer<CChar>?] = [
            strdup(executable), strdup(WorkerZygote.subcommand), strdup("--parent"), strdup(String(getpid())),
            strdup(WorkerZygote.titleRoomOption), strdup(WorkerZygote.titleRoom), nil,
        ]
        defer { arguments.forEach { free($0) } }
        // The environment of a worker with the default sandbox: a fork
        // copies the zygote's memory, its first environment included, into
        // every worker, so nothing a worker may not see may be there.
        var pid = pid_t()
        let status = ChildDescriptors.withFileActions(placing: [.init(descriptor: child, number: WorkerZygote.controlDescriptor)]) { actions in
            ChildSignals.withSpawnAttributes(resetting: [SIGPIPE]) { attributes in
                ChildEnvironment.withEnvironment(passing: { SandboxEnvironment.passes($0, for: .default) }) {
                    posix_spawn(&pid, executable, &actions, &attributes, arguments, $0)
                }
            }
        }
        guard status == 0 else {
            close(host)
            return nil
        }
        let client = ZygoteClient(pid: pid, control: host)
        Threads.detach { client.readReports() }
        return client
    }

    private init(pid: pid_t, control: Int32) {
        self.pid = pid
        self.control = control
    }

    /// Whether it still serves (it dies with a crash or a kill; its workers
    /// die with it).
    var isAlive: Bool { !replies.withLock { $0.gone } }

    /// Forks a worker with these arguments (after `__worker`), environment
    /// and descriptors (each `descriptor` lands on its `number`). They go
    /// to the child on a socket of its own, never through the zygote.
    func fork(arguments: [String], environment: [String],
              placements: [ChildDescriptors.Placement]) -> Result<ForkedWorker, Errno> {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return .failure(Errno(code: errno))
        }
        let (setup, child) = (ends[0], ends[1])
        defer { close(setup) }
        let serial = replies.withLock { replies -> Int32 in
            defer { replies.nextSerial &+= 1 }
            return replies.nextSerial
        }
        let request: [UInt32] = [WorkerZygote.startRequest, UInt32(bitPattern: serial)]
        var childEnd = [child]
        let asked = request.withUnsafeBytes { bytes in
            xcallback_send_with_descriptors(control, bytes.baseAddress, UInt(bytes.count), &childEnd, 1)
        }
        let askError = errno
        close(child)
        guard asked == 0 else { return .failure(Errno(code: askError)) }
        // What the child reads, and then end of input. If it is never
        // forked, the zygote closes its end and this fails with EPIPE.
        var message = WorkerZygote.MessageWriter()
        message.words(placements.map { UInt32(bitPattern: $0.number) })
        message.strings(arguments)
        message.strings(environment)
        let sent = Self.write(message.bytes, descriptors: placements.map(\.descriptor), on: setup)
        let deadline = MonotonicClock.now + 10_000_000_000
        let answer = replies.wait(until: { $0.started[serial] != nil || $0.gone }, deadline: deadline) { replies in
            replies.started.removeValue(forKey: serial)
        }
        switch answer {
        case .success(let worker)?:
            guard sent else {
                // It was forked but could not be told what to run: it exits
                // at the end of its input; nobody waits for it.
                _ = xcallback_pidfd_signal(worker.pidfd, SIGKILL, 0)
                return .failure(Errno(code: EPIPE))
            }
            return .success(worker)
        case .failure(let error)?: return .failure(error)
        case nil: return .failure(Errno(code: isAlive ? ETIMEDOUT : EPIPE))
        }
    }

    private static func write(_ bytes: [UInt8], descriptors: [Int32], on socket: Int32) -> Bool {
        var descriptors = descriptors
        // The descriptors ride on the first byte; the rest is a stream.
        let first = bytes.withUnsafeBytes {
            xcallback_send_with_descriptors(socket, $0.baseAddress, 1, &descriptors, Int32(descriptors.count))
        }
        guard first == 0 else { return false }
        var offset = 1
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Waits (up to `timeout` seconds) for the exit status of the worker
    /// forked as `serial`; nil if the zygote died first (the worker died
    /// with it) or did not say.
    func exitStatus(of serial: Int32, timeout: Double = 10) -> Int32? {
        let deadline = MonotonicClock.now + UInt64(timeout * 1e9)
        return replies.wait(until: { $0.exits[serial] != nil || $0.gone }, deadline: deadline) { replies in
            replies.exits.removeValue(forKey: serial)
        }
    }

    private func readReports() {
        var words: [Int32] = [0, 0, 0]
        while true {
            var pidfd: Int32 = -1
            var count: Int32 = 0
            let length = words.withUnsafeMutableBytes {
                xcallback_receive_with_descriptors(control, $0.baseAddress, UInt($0.count), &pidfd, 1, &count)
            }
            if length < 0 && errno == EINTR { continue }
            guard length == 12 else {
                if count == 1 { close(pidfd) }
                break
            }
            let (kind, serial, value) = (WorkerZygote.Report(rawValue: words[0]), words[1], words[2])
            let started: ForkedWorker? = kind == .started && count == 1
                ? ForkedWorker(pid: value, pidfd: pidfd, serial: serial, zygote: self) : nil
            if count == 1 && started == nil { close(pidfd) }
            replies.withLock { replies in
                switch kind {
                case .started: replies.started[serial] = started.map { .success($0) } ?? .failure(Errno(code: EBADF))
                case .failed: replies.started[serial] = .failure(Errno(code: value))
                case .exited: replies.exits[serial] = value
                case nil: break
                }
            }
            replies.broadcast()
        }
        replies.withLock { $0.gone = true }
        replies.broadcast()
        // Reap the zygote itself (a child of the host).
        _ = WorkerExit.wait(for: pid)
    }
}

/// A worker the zygote forked, as the host holds it: its pidfd, which
/// names the process itself rather than a number that can be reused.
final class ForkedWorker: Sendable {
    let pid: pid_t
    let pidfd: Int32
    let serial: Int32
    let zygote: ZygoteClient

    init(pid: pid_t, pidfd: Int32, serial: Int32, zygote: ZygoteClient) {
        self.pid = pid
        self.pidfd = pidfd
        self.serial = serial
        self.zygote = zygote
    }

    deinit { close(pidfd) }
}
