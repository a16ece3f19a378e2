import CHostSupport
import Logging
import XCallbackBridge
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL
import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process workers are forked from (`xcallback __zygote`), so a worker
/// starts without executing the whole `xcallback` binary again: loading it
/// and its libraries (Foundation among them) cost each worker about 6 ms of
/// CPU before it did anything of its own, and a hundred plug-ins then took
/// 400 ms to start on two cores.
///
/// A fork copies memory, so the zygote must never hold what one worker may
/// see and another may not. It is started once, by the host's spawner
/// thread, with the environment of a default sandbox and nothing else of
/// the host's, and it never learns anything about a worker but that one is
/// wanted: the host sends it one end of a fresh socket (`ZygoteClient`),
/// the zygote forks, and the *child* reads its arguments, environment and
/// descriptors from that socket itself. It is single-threaded,
/// non-dumpable, and dies with the host.
///
/// The host never signals a forked worker by its number: the zygote hands
/// it a pidfd for each, and `WorkerParent` signals through it (the process
/// group too, Linux 6.9), so a worker reaped by the zygote, or by init
/// after the zygote died, can never be confused with a process that took
/// its pid. When a worker exits, the zygote ends its process group while
/// the worker is still a zombie (so the group's number is still the
/// worker's), reaps it, and reports its status by the host's serial number
/// for it, never by pid.
public enum WorkerZygote {
    /// The hidden subcommand the host starts the zygote with.
    public static let subcommand = "__zygote"
    /// The zygote's end of its socket to the host (SOCK_SEQPACKET).
    static let controlDescriptor: Int32 = 3
    /// Where a forked child finds its setup socket, until it has read it.
    static let setupDescriptor: Int32 = 3

    /// What the zygote tells the host: 16 bytes (kind, serial, value, and
    /// for `exited` the worker's peak resident memory in KiB), and with
    /// `started` the worker's pidfd.
    enum Report: Int32 {
        /// A worker was forked: value is its pid.
        case started = 1
        /// A worker exited: value is its `waitpid` status.
        case exited = 2
        /// No worker could be forked: value is the errno.
        case failed = 3
    }

    /// The one request the host makes: 8 bytes (`start`, serial), with the
    /// child's end of its setup socket.
    static let startRequest: UInt32 = 1

    /// Runs, once, what every worker runs first, so the Swift runtime's
    /// type metadata it instantiates is there before the first fork instead
    /// of being built again in each worker (a third of a forked worker's
    /// start).
    public static func warmUp() {
        // The default sandbox's allow-list, with and without a file view:
        // most plug-ins declare nothing, and their workers then load it
        // compiled (a grant's own is built in its worker, as before).
        for fileView in [false, true] { SystemCallPolicy.prepare(for: .default, fileView: fileView) }
        // And the part of the file view every worker shares (a root host's).
        FileViewTemplate.prepare()
        let plan = SandboxPlan(capabilities: .default, scratch: "/nonexistent", pluginPath: "/nonexistent/lib.so", strict: false)
        _ = WorkerMain.Arguments(["/nonexistent/lib.so", "--parent", "1", "--host", "1", WorkerMain.allowInsecureFlag,
                                  WorkerMain.sandboxOption, plan.encoded])
        let taken = [QueryParameter(name: "a://b/:c(/*)", value: "warm-up"), QueryParameter(name: "a://", value: "warm-up")]
        _ = RouteOwners(taken)
        var bytes: [UInt8] = []
        WorkerFrame.hello(version: WorkerFrame.protocolVersion, taken: taken).encode(into: &bytes)
        if bytes.count > 5 {
            _ = bytes.withUnsafeBytes { WorkerFrame.decode(kind: $0[4], payload: UnsafeRawBufferPointer(rebasing: $0[5...])) }
        }
        WorkerFrame.ready(version: WorkerFrame.protocolVersion,
                          info: .init(name: "warm-up", version: "1", summary: "", abiMajor: 1, abiMinor: 0),
                          routes: ["a://b"], signatures: taken, refused: taken).encode(into: &bytes)
        // A lane numbers its routes' calls in a dictionary: its type's
        // metadata took each forked worker a fifth of a millisecond.
        _ = ReplyTable().callName(plugin: "warm-up", route: "warm-up")
        var numbers: [UInt32] = []
        numbers.append(0)
        // The outbox's lock, and a plug-in's handle.
        _ = Lock(())
        _ = PluginHandle(name: "warm-up", logger: Logger(label: "warm-up", factory: { _ in SwiftLogNoOpLogHandler() }))
        var metadata: Logger.Metadata = [:]
        metadata["plugin"] = "warm-up"
        _ = CrashReport.mark(for: "warm-up")
    }

    /// The zygote's loop, until the host goes away. `runWorker` runs in
    /// each forked child with the worker's arguments (after the
    /// subcommand) and returns its exit status.
    public static func serve(parent: pid_t, runWorker: ([String]) -> Int32) -> Int32 {
        _ = xcallback_set_parent_death_signal(SIGKILL)
        if getppid() != parent { return 1 }
        // Same-user processes must not reach into it: whatever they put
        // here would run in every worker, before its sandbox.
        ProcessHardening.makeNondumpable()
        signal(SIGPIPE, SIG_IGN)
        // A stop signal sent to every process (systemd stopping the
        // service) is the host's to act on, as for workers: the zygote
        // leaves when the host closes its socket, never before it.
        _ = xcallback_defer_stop_signals_to_host()
        var workers: [Int32: (pid: pid_t, serial: Int32)] = [:]  // by pidfd
        while true {
            var polled = [pollfd(fd: controlDescriptor, events: Int16(POLLIN), revents: 0)]
            polled += workers.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if poll(&polled, nfds_t(polled.count), -1) < 0 {
                if errno == EINTR { continue }
                return 1
            }
            for event in polled.dropFirst() where event.revents != 0 {
                guard let worker = workers.removeValue(forKey: event.fd) else { continue }
                // A zombie still holds its pid, and so its group's number:
                // whatever the plug-in started ends here, before the reap
                // frees that number.
                kill(-worker.pid, SIGKILL)
                var status: Int32 = 0
                var usage = rusage()
                while wait4(worker.pid, &status, 0, &usage) < 0 && errno == EINTR {}
                close(event.fd)
                report(.exited, serial: worker.serial, value: status, extra: Int32(clamping: usage.ru_maxrss))
            }
            guard polled[0].revents != 0 else { continue }
            var request = [UInt32](repeating: 0, count: 2)
            var setup: Int32 = -1
            var count: Int32 = 0
            let length = request.withUnsafeMutableBytes { bytes in
                xcallback_receive_with_descriptors(controlDescriptor, bytes.baseAddress, UInt(bytes.count), &setup, 1, &count)
            }
            if length == 0 { return 0 }  // the host is gone; its workers follow (PR_SET_PDEATHSIG)
            if length < 0 && errno != EMSGSIZE { return 1 }
            let serial = Int32(bitPattern: request[1])
            guard length == 8, request[0] == startRequest, count == 1 else {
                if count == 1 { close(setup) }
                report(.failed, serial: serial, value: EINVAL)
                continue
            }
            defer { close(setup) }
            switch fork(setup: setup, runWorker: runWorker) {
            case .success(let started):
                workers[started.pidfd] = (started.pid, serial)
                report(.started, serial: serial, value: started.pid, descriptor: started.pidfd)
            case .failure(let error):
                report(.failed, serial: serial, value: error.code)
            }
        }
    }

    private static func fork(setup: Int32, runWorker: ([String]) -> Int32) -> Result<(pid: pid_t, pidfd: Int32), ZygoteClient.Errno> {
        // fork is safe only while this is the one thread: the child gets a
        // copy of every lock, and no other thread to release one.
        guard xcallback_thread_count() == 1 else { return .failure(.init(code: EDEADLK)) }
        let kept = FileViewTemplate.descriptors
        let pid = xcallback_zygote_fork(setup, setupDescriptor, kept, Int32(kept.count))
        if pid == 0 { _exit(runChild(runWorker)) }
        if pid < 0 { return .failure(.init(code: errno)) }
        // Taken before anything could reap it: the child is ours until we do.
        let pidfd = xcallback_pidfd_open(pid)
        guard pidfd >= 0 else {
            let error = errno
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return .failure(.init(code: error))
        }
        return .success((pid, pidfd))
    }

    /// In the forked child: reads what the host wrote on the setup socket
    /// (descriptors, arguments, environment), puts each descriptor in its
    /// place and runs the worker.
    private static func runChild(_ runWorker: ([String]) -> Int32) -> Int32 {
        var descriptors = [Int32](repeating: -1, count: 8)
        var count: Int32 = 0
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            // Descriptors come with the first bytes; later reads take none.
            var received: Int32 = 0
            var more = [Int32](repeating: -1, count: 8)
            let length = chunk.withUnsafeMutableBytes { buffer in
                xcallback_receive_with_descriptors(setupDescriptor, buffer.baseAddress, UInt(buffer.count), &more, 8, &received)
            }
            if length < 0 { return 127 }
            if received > 0 {
                guard count == 0 else { return 127 }
                descriptors = more
                count = received
            }
            if length == 0 { break }
            bytes += chunk[0..<length]
        }
        var message = MessageReader(bytes: bytes[...])
        guard let numbers = message.words(), numbers.count == Int(count),
              let arguments = message.strings(), let environment = message.strings() else { return 127 }
        let placed = numbers.map { Int32(bitPattern: $0) }
        // The file view's template stays until the worker's sandbox is up
        // (`WorkerMain` forgets it before any plug-in code runs).
        let kept = FileViewTemplate.descriptors
        guard xcallback_place_descriptors(descriptors, placed, count, kept, Int32(kept.count)) == 0 else { return 127 }
        clearenv()
        for variable in environment { putenv(strdup(variable)) }
        // ps shows what it is, as for a worker the host executes.
        setCommandLine([CommandLine.arguments.first ?? "xcallback", WorkerMain.subcommand] + arguments)
        return runWorker(arguments)
    }

    /// The room the host leaves in the zygote's command line (an argument
    /// of its own) for a worker's, which `ps` then shows.
    static let titleRoomOption = "--title-room"
    static let titleRoom = String(repeating: "x", count: 4096)

    /// Makes /proc/self/cmdline (and ps) show `arguments`, cut to the room
    /// this process's own command line had.
    public static func setCommandLine(_ arguments: [String]) {
        let copies = arguments.map { UnsafePointer<CChar>(strdup($0)) }
        defer { copies.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        _ = copies.withUnsafeBufferPointer { buffer in
            xcallback_set_command_line(CommandLine.unsafeArgv, CommandLine.argc, buffer.baseAddress, Int32(buffer.count))
        }
    }

    private static func report(_ kind: Report, serial: Int32, value: Int32, extra: Int32 = 0, descriptor: Int32? = nil) {
        let words = [kind.rawValue, serial, value, extra]
        _ = words.withUnsafeBytes { bytes in
            var descriptors = descriptor.map { [$0] } ?? []
            return xcallback_send_with_descriptors(controlDescriptor, bytes.baseAddress, UInt(bytes.count),
                                                   &descriptors, Int32(descriptors.count))
        }
    }

    /// Reads a request: 32-bit words, and lists of NUL-terminated strings
    /// (a count first).
    struct MessageReader {
        var bytes: ArraySlice<UInt8>

        mutating func word() -> UInt32? {
            guard bytes.count >= 4 else { return nil }
            let value = bytes.prefix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) }
            bytes = bytes.dropFirst(4)
            return value
        }

        mutating func words() -> [UInt32]? {
            guard let count = word(), count <= 8 else { return nil }
            var result: [UInt32] = []
            for _ in 0..<count {
                guard let value = word() else { return nil }
                result.append(value)
            }
            return result
        }

        mutating func strings() -> [String]? {
            guard let count = word(), count <= 4096 else { return nil }
            var result: [String] = []
            for _ in 0..<count {
                guard let end = bytes.firstIndex(of: 0) else { return nil }
                result.append(String(decoding: bytes[bytes.startIndex..<end], as: UTF8.self))
                bytes = bytes[(end + 1)...]
            }
            return result
        }
    }

    /// Writes a request `MessageReader` reads.
    struct MessageWriter {
        var bytes: [UInt8] = []

        mutating func word(_ value: UInt32) {
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
        }

        mutating func words(_ values: [UInt32]) {
            word(UInt32(values.count))
            values.forEach { word($0) }
        }

        mutating func strings(_ values: [String]) {
            word(UInt32(values.count))
            for value in values {
                bytes += value.utf8
                bytes.append(0)
            }
        }
    }
}
