import CHostSupport
import XCallbackSandbox
import XCallbackURL

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
/// The zygote is started once, by the host's spawner thread, with nothing
/// of the host's but the locale and `PATH`-like variables of the default
/// sandbox (a fork inherits memory, so the zygote must never hold what a
/// worker may not see). It is single-threaded, non-dumpable, and dies with
/// the host. For each worker the host sends the worker's arguments, its
/// environment and its descriptors (`ZygoteClient`); the zygote forks, and
/// the child places the descriptors, leads a process group of its own,
/// takes that environment and runs the worker as `xcallback __worker` would.
///
/// The zygote keeps each worker a zombie until the host has finished with
/// it (`release`), as `waitpid` does for a child of the host: so a pid the
/// host still signals (its group, at the end) cannot belong to anyone else.
public enum WorkerZygote {
    /// The hidden subcommand the host starts the zygote with.
    public static let subcommand = "__zygote"
    /// The zygote's end of its socket to the host.
    static let controlDescriptor: Int32 = 3

    /// What the zygote tells the host (12 bytes: kind, pid, value).
    enum Report: Int32 {
        /// A worker was forked: value 0.
        case started = 1
        /// A worker exited: value is its `waitpid` status.
        case exited = 2
        /// No worker could be forked: value is the errno.
        case failed = 3
    }

    /// What the host asks (the first word of a request).
    enum Request: UInt32 {
        /// Fork a worker: numbers, arguments and environment follow; the
        /// descriptors come with the message.
        case start = 1
        /// The host is done with worker `pid`: reap it.
        case release = 2
    }

    /// Runs, once, what every worker runs first, so the Swift runtime's
    /// type metadata it instantiates is there before the first fork instead
    /// of being built again in each worker (a third of a forked worker's
    /// start).
    public static func warmUp() {
        let plan = SandboxPlan(capabilities: .default, scratch: "/nonexistent", pluginPath: "/nonexistent/lib.so", strict: false)
        _ = WorkerMain.Arguments(["/nonexistent/lib.so", "--parent", "1", WorkerMain.allowInsecureFlag,
                                  WorkerMain.sandboxOption, plan.encoded])
        let taken = [QueryParameter(name: "a://b/:c(/*)", value: "warm-up"), QueryParameter(name: "a://", value: "warm-up")]
        _ = RouteOwners(taken)
        var bytes: [UInt8] = []
        WorkerFrame.hello(version: WorkerFrame.protocolVersion, taken: taken).encode(into: &bytes)
        if bytes.count > 5 {
            _ = bytes.withUnsafeBytes { WorkerFrame.decode(kind: $0[4], payload: UnsafeRawBufferPointer(rebasing: $0[5...])) }
        }
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
        var workers: [pid_t: Int32] = [:]  // pid → pidfd
        var reported = Set<pid_t>()
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            var polled = [pollfd(fd: controlDescriptor, events: Int16(POLLIN), revents: 0)]
            let watched = workers.filter { !reported.contains($0.key) }
            polled += watched.values.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if poll(&polled, nfds_t(polled.count), -1) < 0 {
                if errno == EINTR { continue }
                return 1
            }
            for (pid, pidfd) in watched {
                var status: Int32 = 0
                if xcallback_pidfd_exit_status(pidfd, 1, &status) == 0 {
                    reported.insert(pid)
                    report(.exited, pid: pid, value: status)
                }
            }
            guard polled[0].revents != 0 else { continue }
            var descriptors = [Int32](repeating: -1, count: 8)
            var count: Int32 = 0
            let length = xcallback_receive_with_descriptors(controlDescriptor, &buffer, UInt(buffer.count),
                                                            &descriptors, 8, &count)
            if length == 0 { return 0 }  // the host is gone; its workers follow (PR_SET_PDEATHSIG)
            if length < 0 {
                if errno == EMSGSIZE { report(.failed, pid: 0, value: EMSGSIZE); continue }
                return 1
            }
            let received = Array(descriptors[0..<Int(count)])
            defer { received.forEach { close($0) } }
            var message = MessageReader(bytes: buffer[0..<length])
            switch message.word().flatMap(Request.init(rawValue:)) {
            case .release:
                if let pid = message.word().map({ pid_t(bitPattern: $0) }), let pidfd = workers.removeValue(forKey: pid) {
                    var status: Int32 = 0
                    _ = xcallback_pidfd_exit_status(pidfd, 0, &status)
                    close(pidfd)
                    reported.remove(pid)
                }
            case .start:
                guard let started = start(&message, descriptors: received, runWorker: runWorker) else { continue }
                workers[started.pid] = started.pidfd
                report(.started, pid: started.pid, value: 0)
            case nil:
                report(.failed, pid: 0, value: EINVAL)
            }
        }
    }

    private static func start(_ message: inout MessageReader, descriptors: [Int32],
                              runWorker: ([String]) -> Int32) -> (pid: pid_t, pidfd: Int32)? {
        guard let numbers = message.words(), numbers.count == descriptors.count,
              let arguments = message.strings(), let environment = message.strings() else {
            report(.failed, pid: 0, value: EINVAL)
            return nil
        }
        // fork is safe only while this is the one thread: the child gets a
        // copy of every lock, and no other thread to release one.
        guard xcallback_thread_count() == 1 else {
            report(.failed, pid: 0, value: EDEADLK)
            return nil
        }
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        let placed = numbers.map { Int32(bitPattern: $0) }
        let pid = envp.withUnsafeMutableBufferPointer { environment in
            xcallback_zygote_fork(descriptors, placed, Int32(descriptors.count), environment.baseAddress)
        }
        if pid == 0 {
            // ps shows what it is, as for a worker the host executes.
            setCommandLine([CommandLine.arguments.first ?? "xcallback", WorkerMain.subcommand] + arguments)
            _exit(runWorker(arguments))
        }
        if pid < 0 {
            report(.failed, pid: 0, value: errno)
            return nil
        }
        let pidfd = xcallback_pidfd_open(pid)
        guard pidfd >= 0 else {
            // Without a pidfd it could not be watched: end it at once.
            let error = errno
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            report(.failed, pid: 0, value: error)
            return nil
        }
        return (pid, pidfd)
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

    private static func report(_ kind: Report, pid: pid_t, value: Int32) {
        let words = [kind.rawValue, pid, value]
        _ = words.withUnsafeBytes { send(controlDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
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
