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
        var started: [Result<pid_t, Errno>] = []
        var exits: [pid_t: Int32] = [:]
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

    /// Starts `executable __zygote`; nil when it cannot be started (the
    /// host then executes each worker).
    static func start(executable: String) -> ZygoteClient? {
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
    /// and descriptors (each `descriptor` lands on its `number`).
    func start(arguments: [String], environment: [String],
               placements: [ChildDescriptors.Placement]) -> Result<pid_t, Errno> {
        var message = WorkerZygote.MessageWriter()
        message.word(WorkerZygote.Request.start.rawValue)
        message.words(placements.map { UInt32(bitPattern: $0.number) })
        message.strings(arguments)
        message.strings(environment)
        let descriptors = placements.map(\.descriptor)
        let sent = message.bytes.withUnsafeBytes { bytes in
            xcallback_send_with_descriptors(control, bytes.baseAddress, UInt(bytes.count), descriptors, Int32(descriptors.count))
        }
        guard sent == 0 else { return .failure(Errno(code: errno)) }
        return replies.wait(until: { !$0.started.isEmpty || $0.gone }) { replies in
            replies.started.isEmpty ? .failure(Errno(code: EPIPE)) : replies.started.removeFirst()
        }
    }

    /// Waits (up to `timeout` seconds) for worker `pid`'s exit status; a
    /// worker whose zygote is gone was killed with it.
    func exitStatus(of pid: pid_t, timeout: Double = 10) -> Int32 {
        let deadline = MonotonicClock.now + UInt64(timeout * 1e9)
        return replies.wait(until: { $0.exits[pid] != nil || $0.gone }, deadline: deadline) { replies in
            replies.exits[pid] ?? SIGKILL
        }
    }

    /// Lets the zygote reap `pid`: the host will not signal it again.
    func release(_ pid: pid_t) {
        replies.withLock { _ = $0.exits.removeValue(forKey: pid) }
        var message = WorkerZygote.MessageWriter()
        message.word(WorkerZygote.Request.release.rawValue)
        message.word(UInt32(bitPattern: pid))
        _ = message.bytes.withUnsafeBytes { send(control, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private func readReports() {
        var words: [Int32] = [0, 0, 0]
        while true {
            let count = words.withUnsafeMutableBytes { recv(control, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count == 12 else { break }
            replies.withLock { replies in
                switch WorkerZygote.Report(rawValue: words[0]) {
                case .started: replies.started.append(.success(words[1]))
                case .failed: replies.started.append(.failure(Errno(code: words[2])))
                case .exited: replies.exits[words[1]] = words[2]
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
