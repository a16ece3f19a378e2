// A small harness for end-to-end tests: it runs the BUILT `xcallback`
// binary (posix_spawn, pipes, a hard timeout that kills the child) with the
// BUILT sample plug-ins copied into private temporary directories.
//
// Every wait is bounded. Nothing sleeps where an event exists: output and
// exit are waited for on a condition; only FIFO and socket readiness (which
// have no event to wait on from outside the host) are polled with short,
// bounded waits.

import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - Errors

/// A harness failure with a message meant for people.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Built products

/// The directory the test runner was built into holds `xcallback` and the
/// sample plug-ins (`swift test` builds them: they are part of its plan).
enum Products {
    static let directory: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let path = count > 0
            ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : CommandLine.arguments[0]
        return String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
    }()

    static var xcallback: String { directory + "/xcallback" }

    /// The sample plug-ins, by product name.
    static let pluginNames = ["Alert", "Calculator", "Faulty", "Pokedex"]

    static func plugin(_ name: String) -> String { directory + "/lib\(name).so" }

    /// Throws a clear message when the products are missing.
    static func require() throws {
        var missing: [String] = []
        if access(xcallback, X_OK) != 0 { missing.append(xcallback) }
        for name in pluginNames where access(plugin(name), R_OK) != 0 { missing.append(plugin(name)) }
        if !missing.isEmpty {
            throw HarnessError("""
                built products not found next to the test runner: \(missing.joined(separator: ", ")). \
                Run `swift build` (it builds the xcallback executable and the lib*.so sample plug-ins) \
                and then the tests again.
                """)
        }
    }
}

// MARK: - Temporary directories

/// A private temporary directory (mode 0700), removed when released.
/// Each test makes its own: tests run in parallel.
final class Scratch: @unchecked Sendable {
    let path: String

    init() throws {
        try Products.require()
        var template = Array("/tmp/xcb-e2e-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw HarnessError("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// A fresh plug-in directory (mode 0755) holding COPIES (mode 0755) of
    /// the named sample plug-ins.
    func pluginDirectory(_ names: [String] = Products.pluginNames, name: String = "plugins") throws -> String {
        let directory = file(name)
        guard mkdir(directory, 0o755) == 0 else {
            throw HarnessError("mkdir \(directory): \(String(cString: strerror(errno)))")
        }
        chmod(directory, 0o755)  // whatever the umask
        for plugin in names {
            let destination = directory + "/lib\(plugin).so"
            try FileManager.default.copyItem(atPath: Products.plugin(plugin), toPath: destination)
            chmod(destination, 0o755)
        }
        return directory
    }
}

// MARK: - Exit status

enum ExitStatus: Equatable, CustomStringConvertible, Sendable {
    case exited(Int32)
    case signaled(Int32)

    init(waitStatus status: Int32) {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (they are macros).
        let signal = status & 0x7f
        if signal == 0 {
            self = .exited((status >> 8) & 0xff)
        } else {
            self = .signaled(signal)
        }
    }

    var description: String {
        switch self {
        case .exited(let code): "exit status \(code)"
        case .signaled(let signal): "killed by signal \(signal)"
        }
    }

    var isSuccess: Bool { self == .exited(0) }
}

// MARK: - Child processes

/// What the reader and waiter threads share with the test (they do not
/// retain the ChildProcess, so dropping it kills a child still running).
private final class ChildState: @unchecked Sendable {
    let condition = NSCondition()
    var stdoutBytes: [UInt8] = []
    /// Newlines in `stdoutBytes`, counted as bytes arrive: waiting for N
    /// lines must not rescan everything read so far under the lock at each
    /// wake-up (quadratic; at 200,000 records the reader thread then stalled
    /// long enough for the host's stdout pipe to fill).
    var stdoutLineCount = 0
    var stderrBytes: [UInt8] = []
    var stdoutDone = false
    var stderrDone = false
    var status: ExitStatus?
    /// For a stdout reader that leaves early (`closeAfterLines`): a copy
    /// of the pipe's write end, which tells when no reader is left
    /// (`waitForNoReader`). Taken by that reader when it leaves, or closed
    /// once the child is reaped; -1 then, and for every other child.
    var stdoutWatch: Int32 = -1

    /// Waits until `predicate` holds (called under the lock), or the deadline.
    func wait(timeout: Double, until predicate: () -> Bool) -> Bool {
        OwnThread.checkMayBlock("a wait for a child process")
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(timeout))
        condition.lock()
        defer { condition.unlock() }
        while !predicate() {
            if !condition.wait(until: deadline) { return predicate() }
        }
        return true
    }

    func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    func update(_ body: () -> Void) {
        condition.lock()
        body()
        condition.broadcast()
        condition.unlock()
    }

}

/// One spawned child with its stdin (optional), stdout and stderr.
///
/// Two reader threads collect stdout and stderr; a waiter thread reaps the
/// child. Everything else waits on one condition with a deadline. A child
/// still running when its ChildProcess is released is killed (SIGKILL).
final class ChildProcess: @unchecked Sendable {
    enum Input {
        /// /dev/null.
        case null
        /// These bytes, then end of file (written from a thread).
        case bytes([UInt8])
        /// A pipe the test writes with `write(_:)` and ends with `closeInput()`.
        case pipe
        /// A file opened for reading.
        case file(String)
    }

    let pid: pid_t
    let commandLine: String
    private let state = ChildState()
    private let inputLock = NSLock()
    private var inputDescriptor: Int32 = -1

    /// pipe2(2): both ends close-on-exec from the start, so a child spawned
    /// by a parallel test never inherits them (Glibc's module hides it
    /// behind _GNU_SOURCE).
    private static let pipe2: @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else {  // RTLD_DEFAULT
            fatalError("pipe2 not found")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)
    }()

    /// Held while a child is being made, from its first pipe to the close
    /// of the child's ends: a child being spawned holds a copy of every
    /// descriptor of this process until it execs, close-on-exec ones
    /// included. Also held by a stdout reader that leaves (`closeAfterLines`)
    /// while it closes, so that no such copy keeps the read end open behind it.
    fileprivate static let spawning = NSLock()

    private static let ignoreSIGPIPE: Void = {
        // Writing to a child that already exited must fail with EPIPE, not
        // kill the test runner.
        signal(SIGPIPE, SIG_IGN)
    }()

    /// Spawns `executable` (the built `xcallback` by default).
    /// - Parameter closeStdoutAfterLines: the harness closes its end of the
    ///   child's stdout once it has read this many lines (a reader that goes
    ///   away early, like `| head -n N`).
    /// - Parameter stderrDescriptor: the child's stderr is this descriptor
    ///   (a terminal, say) instead of a pipe the harness reads; `stderr` then
    ///   stays empty. The caller keeps (and closes) it.
    /// - Parameter inheritedDescriptors: the child gets these as descriptors
    ///   3, 4, … (a listening socket for socket activation, say). The caller
    ///   keeps (and closes) its own.
    /// - Parameter ownProcessGroup: the child leads a process group of its
    ///   own, as a shell's foreground job does: `send(signalToGroup:)` then
    ///   signals the whole group, as a terminal's Ctrl-C does.
    init(_ arguments: [String], executable: String = Products.xcallback, stdin: Input = .null,
         environment: [String: String]? = nil, closeStdoutAfterLines: Int? = nil,
         stderrDescriptor: Int32? = nil, inheritedDescriptors: [Int32] = [],
         ownProcessGroup: Bool = false) throws {
        _ = Self.ignoreSIGPIPE
        commandLine = ([executable] + arguments).joined(separator: " ")

        func makePipe() throws -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard Self.pipe2(&ends, O_CLOEXEC) == 0 else {
                throw HarnessError("pipe2: \(String(cString: strerror(errno)))")
            }
            return (ends[0], ends[1])
        }

        // One spawn at a time, from the first pipe to the last close of the
        // child's ends (see `spawning`).
        Self.spawning.lock()
        var spawningHeld = true
        defer { if spawningHeld { Self.spawning.unlock() } }
        // The child's end of stdin.
        let childStdin: Int32
        var stdinBytes: [UInt8]? = nil
        var parentStdin: Int32 = -1
        switch stdin {
        case .null:
            childStdin = open("/dev/null", O_RDONLY | O_CLOEXEC)
        case .file(let path):
            childStdin = open(path, O_RDONLY | O_CLOEXEC)
        case .bytes(let bytes):
            let ends = try makePipe()
            childStdin = ends.read
            parentStdin = ends.write
            stdinBytes = bytes
        case .pipe:
            let ends = try makePipe()
            childStdin = ends.read
            parentStdin = ends.write
        }
        guard childStdin >= 0 else { throw HarnessError("cannot open the child's stdin: \(String(cString: strerror(errno)))") }
        let out = try makePipe()
        let err = try makePipe()

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, childStdin, 0)
        posix_spawn_file_actions_adddup2(&actions, out.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderrDescriptor ?? err.write, 2)
        // Each is copied above the targets first: dup2 of a descriptor onto
        // itself would leave it close-on-exec.
        var staged: [Int32] = []
        defer { staged.forEach { close($0) } }
        for (index, descriptor) in inheritedDescriptors.enumerated() {
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 64)
            guard copy >= 0 else { throw HarnessError("cannot pass descriptor \(descriptor): \(String(cString: strerror(errno)))") }
            staged.append(copy)
            posix_spawn_file_actions_adddup2(&actions, copy, 3 + Int32(index))
        }

        // A clean signal state: nothing blocked, default dispositions (the
        // runner ignores SIGPIPE, and ignored signals survive exec).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var environmentEntries: [String] = []
        if let environment {
            environmentEntries = environment.map { "\($0.key)=\($0.value)" }
        } else {
            // The runner's environment, minus anything that would point the
            // host at other plug-ins.
            for (key, value) in ProcessInfo.processInfo.environment where key != "XCALLBACK_PLUGIN_PATH" {
                environmentEntries.append("\(key)=\(value)")
            }
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environmentEntries.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        // The kernel lets posix_spawn return once the child has left this
        // process's memory, before exec closes its close-on-exec copies of
        // this process's descriptors. A pipe's write end, placed above the
        // others, is closed last: its EOF says the child holds none of them.
        let execDone = try makePipe()
        let sentinel = fcntl(execDone.write, F_DUPFD_CLOEXEC, 600)
        if sentinel >= 0 {
            close(execDone.write)
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        close(sentinel >= 0 ? sentinel : execDone.write)
        var byte: UInt8 = 0
        while read(execDone.read, &byte, 1) < 0 && errno == EINTR {}
        close(execDone.read)
        close(childStdin)
        // Kept for a reader that leaves early (`ChildState.stdoutWatch`).
        let stdoutWatch = spawned == 0 && closeStdoutAfterLines != nil ? out.write : -1
        if stdoutWatch < 0 { close(out.write) }
        close(err.write)
        Self.spawning.unlock()
        spawningHeld = false
        guard spawned == 0 else {
            close(out.read)
            close(err.read)
            if parentStdin >= 0 { close(parentStdin) }
            throw HarnessError("posix_spawn \(executable): \(String(cString: strerror(spawned)))")
        }
        pid = child
        let reaped = child
        state.update { state.stdoutWatch = stdoutWatch }
        Self.startReader(out.read, state: state, isStdout: true, closeAfterLines: closeStdoutAfterLines)
        if stderrDescriptor == nil {
            Self.startReader(err.read, state: state, isStdout: false, closeAfterLines: nil)
        } else {
            close(err.read)
            state.update { state.stderrDone = true }
        }
        Thread.detachNewThread { [state] in
            var raw: Int32 = 0
            while waitpid(reaped, &raw, 0) < 0 && errno == EINTR {}
            state.update {
                state.status = ExitStatus(waitStatus: raw)
                // The stdout reader has not left: it reads to EOF, which
                // this copy would withhold.
                if state.stdoutWatch >= 0 {
                    close(state.stdoutWatch)
                    state.stdoutWatch = -1
                }
            }
        }
        if let stdinBytes {
            // The writer thread owns this end and closes it.
            let writeEnd = parentStdin
            Thread.detachNewThread {
                _ = Self.writeAll(writeEnd, stdinBytes)
                close(writeEnd)
            }
        } else {
            inputDescriptor = parentStdin
        }
    }

    deinit {
        // A test that failed half-way must not leave a host running.
        if state.locked({ state.status == nil }) { kill(pid, SIGKILL) }
        if inputDescriptor >= 0 { close(inputDescriptor) }
    }

    private static func startReader(_ descriptor: Int32, state: ChildState, isStdout: Bool, closeAfterLines: Int?) {
        Thread.detachNewThread {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            var lines = 0
            while true {
                let count = read(descriptor, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                // Counted outside the lock: only this thread writes stdout.
                let newlines = isStdout ? chunk[0..<count].lazy.filter { $0 == UInt8(ascii: "\n") }.count : 0
                state.update {
                    if isStdout {
                        state.stdoutBytes.append(contentsOf: chunk[0..<count])
                        state.stdoutLineCount += newlines
                    } else {
                        state.stderrBytes.append(contentsOf: chunk[0..<count])
                    }
                }
                if let limit = closeAfterLines {
                    lines += chunk[0..<count].lazy.filter { $0 == UInt8(ascii: "\n") }.count
                    if lines >= limit { break }
                }
            }
            if closeAfterLines != nil {
                // A reader that leaves, as `| head -n 1` does: the child's next
                // write must find no reader. A child another thread is
                // spawning has a copy of this end until it execs (close-on-exec
                // acts at exec); under load one kept it long enough for the
                // host's write to succeed, and the host went on reading a stdin
                // that never ends. Closed while no child is being spawned, it
                // leaves no copy behind.
                spawning.lock()
                close(descriptor)
                spawning.unlock()
                // A child spawned by another test module (Subprocess.run, a
                // unit test's worker: all in this one process) takes no such
                // lock: wait until its copy is gone too. Without this,
                // `closedStdout` failed 7 times in 15 beside a thread
                // spawning /bin/true in a loop.
                let watch = state.locked { () -> Int32 in
                    defer { state.stdoutWatch = -1 }
                    return state.stdoutWatch
                }
                if watch >= 0 {
                    waitForNoReader(watch, timeout: 10)
                    close(watch)
                }
                state.update { state.stdoutDone = true }
                return
            }
            close(descriptor)
            state.update { if isStdout { state.stdoutDone = true } else { state.stderrDone = true } }
        }
    }

    /// Waits until no process holds a read end of the pipe whose write end
    /// is `watch`: poll then reports POLLERR on it (asked for no event, it
    /// wakes for nothing else). Bounded: past `timeout` the caller goes on.
    private static func waitForNoReader(_ watch: Int32, timeout: Double) {
        let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(timeout))
        var entry = pollfd(fd: watch, events: 0, revents: 0)
        while true {
            let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000).rounded(.up))
            let ready = poll(&entry, 1, remaining)
            if ready < 0 && errno == EINTR { continue }
            return
        }
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    // MARK: stdin

    /// Writes to the child's stdin pipe (`.pipe` only).
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        inputLock.lock()
        defer { inputLock.unlock() }
        precondition(inputDescriptor >= 0, "stdin is not an open pipe")
        return Self.writeAll(inputDescriptor, bytes)
    }

    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// Ends the child's stdin (EOF).
    func closeInput() {
        inputLock.lock()
        defer { inputLock.unlock() }
        if inputDescriptor >= 0 {
            close(inputDescriptor)
            inputDescriptor = -1
        }
    }

    // MARK: signals and waiting

    /// Sends `signal` unless the child was already reaped (its pid may be reused).
    func send(signal: Int32) {
        state.condition.lock()
        defer { state.condition.unlock() }
        if state.status == nil { kill(pid, signal) }
    }

    /// Sends `signal` to the child's process group (the child must lead
    /// one: `ownProcessGroup`), as a terminal does to its foreground job,
    /// unless the child was already reaped (its group may be gone).
    func send(signalToGroup signal: Int32) {
        state.condition.lock()
        defer { state.condition.unlock() }
        if state.status == nil { kill(-pid, signal) }
    }

    /// Whether the child has exited (without waiting).
    var hasExited: Bool { state.locked { state.status != nil } }

    /// Waits for the child to exit. Past `timeout` seconds the child is
    /// killed (SIGKILL), an issue is recorded, and the signal status returned.
    @discardableResult
    func waitForExit(timeout: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) -> ExitStatus {
        if !state.wait(timeout: timeout, until: { state.status != nil }) {
            send(signal: SIGKILL)
            Issue.record("\(commandLine) did not exit within \(timeout) s; killed it", sourceLocation: sourceLocation)
            _ = state.wait(timeout: 10, until: { state.status != nil })
        }
        // The pipes reach EOF when the child (and anything it started) is gone.
        _ = state.wait(timeout: 5, until: { state.stdoutDone && state.stderrDone })
        return state.locked { state.status ?? .signaled(SIGKILL) }
    }

    /// Waits until stdout holds at least `count` complete lines; false on
    /// timeout, or when stdout ended with fewer.
    func waitForStdoutLines(_ count: Int, timeout: Double = 10) -> Bool {
        _ = state.wait(timeout: timeout) { state.stdoutLineCount >= count || state.stdoutDone }
        return state.locked { state.stdoutLineCount >= count }
    }

    /// Waits until the harness's end of stdout is closed (EOF from the
    /// child, or `closeStdoutAfterLines` reached); false on timeout.
    func waitForStdoutClosed(timeout: Double = 10) -> Bool {
        state.wait(timeout: timeout) { state.stdoutDone }
    }

    /// Waits until stderr contains `text`; false on timeout.
    func waitForStderr(containing text: String, timeout: Double = 10) -> Bool {
        state.wait(timeout: timeout) { String(decoding: state.stderrBytes, as: UTF8.self).contains(text) }
    }

    /// Waits until stdout, as text, satisfies `predicate`; false on timeout.
    func waitForStdout(timeout: Double = 10, until predicate: (String) -> Bool) -> Bool {
        state.wait(timeout: timeout) { predicate(String(decoding: state.stdoutBytes, as: UTF8.self)) }
    }

    /// Waits until stdout's bytes, as they are, satisfy `predicate`; false
    /// on timeout. For a test that follows a large output as it grows and
    /// looks only at what is new each time: `waitForStdout(until:)` decodes
    /// the whole output at every wake-up, under the lock the thread reading
    /// the child's stdout needs, so that on a busy machine the child ends up
    /// blocked on its full stdout pipe, waiting for the test.
    func waitForStdoutBytes(timeout: Double = 10, until predicate: ([UInt8]) -> Bool) -> Bool {
        state.wait(timeout: timeout) { predicate(state.stdoutBytes) }
    }

    /// Waits until stderr, as text, satisfies `predicate`; false on timeout.
    func waitForStderr(timeout: Double = 10, until predicate: (String) -> Bool) -> Bool {
        state.wait(timeout: timeout) { predicate(String(decoding: state.stderrBytes, as: UTF8.self)) }
    }

    // MARK: output

    var stdout: String { state.locked { String(decoding: state.stdoutBytes, as: UTF8.self) } }
    var stderr: String { state.locked { String(decoding: state.stderrBytes, as: UTF8.self) } }

    /// stdout split into lines (without the terminators; a last unterminated piece too).
    var stdoutLines: [String] { Self.lines(stdout) }

    static func lines(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }
}

// MARK: - Waiting off Swift Testing's threads

/// Runs `body`, which blocks (a wait for a child, a FIFO, a socket), on a
/// thread of its own and awaits its result. Swift Testing runs tests on its
/// cooperative pool, one thread per core: a test that blocks one of those
/// threads holds back the other tests (two at a time on a 2-core machine),
/// and a parallel test's waits then stretch by the time they queue.
func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        OwnThread.detach { continuation.resume(returning: body()) }
    }
}

/// `offCooperativePool` for a body that throws.
func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await offCooperativePool { Result { try body() } }.get()
}

extension ChildProcess {
    /// `waitForExit`, awaited without holding a cooperative thread. The issue
    /// for a child that had to be killed is recorded here, in the test's task.
    func awaitExit(timeout: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) async -> ExitStatus {
        let exited = await offCooperativePool { [state] in state.wait(timeout: timeout) { state.status != nil } }
        if !exited {
            send(signal: SIGKILL)
            Issue.record("\(commandLine) did not exit within \(timeout) s; killed it", sourceLocation: sourceLocation)
        }
        return await offCooperativePool { [state] in
            _ = state.wait(timeout: 10) { state.status != nil }
            // The pipes reach EOF when the child (and anything it started) is gone.
            _ = state.wait(timeout: 5) { state.stdoutDone && state.stderrDone }
            return state.locked { state.status ?? .signaled(SIGKILL) }
        }
    }

    /// Sends `signal` and times the child's exit, both on a thread of this
    /// call's own: the seconds are the child's, not how long the test's task
    /// then waited for a cooperative thread (in the full suite on 2 cores,
    /// up to 6 s). Nil seconds: it did not exit within `timeout`.
    func stopAndTimeExit(signal: Int32, timeout: Double = 15) async -> (status: ExitStatus?, seconds: Double?) {
        await offCooperativePool { [self, state] in
            let stopped = Date()
            send(signal: signal)
            guard state.wait(timeout: timeout, until: { state.status != nil }) else { return (nil, nil) }
            let seconds = Date().timeIntervalSince(stopped)
            return (state.locked { state.status }, seconds)
        }
    }

    /// `waitForStdoutLines`, awaited without holding a cooperative thread.
    func awaitStdoutLines(_ count: Int, timeout: Double = 10) async -> Bool {
        await offCooperativePool { [self] in waitForStdoutLines(count, timeout: timeout) }
    }
}

/// What a finished run left behind.
struct RunResult: Sendable {
    let status: ExitStatus
    let stdout: String
    let stderr: String
    let seconds: Double

    var lines: [String] { ChildProcess.lines(stdout) }

    /// The stdout lines parsed as `jsonl` records.
    func records() throws -> [Record] {
        try lines.map { try Record(jsonLine: $0) }
    }
}

/// Runs `xcallback ARGUMENTS` with `input` on stdin until it exits (killed
/// past `timeout` seconds).
func xcallback(_ arguments: [String], input: [UInt8]? = nil, timeout: Double = 20,
               executable: String = Products.xcallback,
               sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
    let start = Date()
    let child = try ChildProcess(arguments, executable: executable, stdin: input.map { .bytes($0) } ?? .null)
    let status = child.waitForExit(timeout: timeout, sourceLocation: sourceLocation)
    return RunResult(status: status, stdout: child.stdout, stderr: child.stderr,
                     seconds: Date().timeIntervalSince(start))
}

func xcallback(_ arguments: [String], lines: [String], timeout: Double = 20,
               executable: String = Products.xcallback,
               sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
    try xcallback(arguments, input: Array(lines.map { $0 + "\n" }.joined().utf8), timeout: timeout,
                  executable: executable, sourceLocation: sourceLocation)
}

/// Writes an executable script (mode 0755). Written close-on-exec under
/// another name, then renamed: a child that a parallel test spawns must not
/// inherit a descriptor open for writing, or running the script fails with
/// ETXTBSY.
func installScript(at path: String, _ script: String) throws {
    let temporary = path + ".tmp"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
    guard descriptor >= 0 else { throw HarnessError("create \(temporary): \(String(cString: strerror(errno)))") }
    let bytes = Array(script.utf8)
    let written = write(descriptor, bytes, bytes.count)
    close(descriptor)
    guard written == bytes.count, chmod(temporary, 0o755) == 0, rename(temporary, path) == 0 else {
        throw HarnessError("write \(path): \(String(cString: strerror(errno)))")
    }
}

// MARK: - Records

/// One `jsonl` outcome record.
struct Record: Equatable, Sendable, CustomStringConvertible {
    var input: String?
    var outcome: String
    var params: [String: String]
    var callback: String?

    init(jsonLine: String) throws {
        guard let data = jsonLine.data(using: .utf8),
              let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw HarnessError("not a JSON object: \(jsonLine)")
        }
        guard let outcome = object["outcome"] as? String else { throw HarnessError("no outcome: \(jsonLine)") }
        guard let params = object["params"] as? [String: Any] else { throw HarnessError("no params object: \(jsonLine)") }
        guard object.keys.contains("input"), object.keys.contains("callback") else {
            throw HarnessError("input or callback missing: \(jsonLine)")
        }
        self.outcome = outcome
        self.input = object["input"] as? String
        self.callback = object["callback"] as? String
        var strings: [String: String] = [:]
        for (key, value) in params {
            guard let text = value as? String else { throw HarnessError("param \(key) is not a string: \(jsonLine)") }
            strings[key] = text
        }
        self.params = strings
    }

    var errorCode: String? { params["errorCode"] }
    var errorDomain: String? { params["errorDomain"] }

    var description: String {
        "{input: \(input.map { "\"\($0)\"" } ?? "null"), outcome: \(outcome), params: \(params), callback: \(callback ?? "null")}"
    }
}

// MARK: - FIFO and socket helpers

/// Waits until a host has the FIFO at `path` open for reading (a
/// non-blocking open for writing then succeeds). Polls: there is no event.
func waitForFIFOReader(_ path: String, timeout: Double = 10, host: ChildProcess? = nil) -> Bool {
    OwnThread.checkMayBlock("waitForFIFOReader")
    let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(timeout))
    while Date() < deadline {
        let descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if descriptor >= 0 {
            close(descriptor)
            return true
        }
        if host?.hasExited == true { return false }
        usleep(10_000)
    }
    return false
}

/// Runs `body` with a `sockaddr_un` for `path`; nil when `path` does not
/// fit in one.
func withUnixAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.enumerated() { raw[index] = byte }
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A connected Unix stream socket, or nil.
func connectUnixSocket(_ path: String) -> Int32? {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { return nil }
    guard withUnixAddress(path, { connect(descriptor, $0, $1) }) == 0 else {
        close(descriptor)
        return nil
    }
    return descriptor
}

/// A Unix socket (close-on-exec), bound to `path` if given, listening if asked.
func unixSocket(type: Int32 = Int32(SOCK_STREAM.rawValue), boundTo path: String?, listening: Bool) throws -> Int32 {
    let descriptor = socket(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
    if let path {
        guard withUnixAddress(path, { bind(descriptor, $0, $1) }) == 0 else {
            close(descriptor)
            throw HarnessError("bind \(path): \(String(cString: strerror(errno)))")
        }
    }
    if listening && listen(descriptor, 16) != 0 {
        close(descriptor)
        throw HarnessError("listen: \(String(cString: strerror(errno)))")
    }
    return descriptor
}

/// Waits until a host accepts connections on the socket at `path`. Polls:
/// there is no event. The probe connection sends nothing and closes.
func waitForSocketListener(_ path: String, timeout: Double = 10, host: ChildProcess? = nil) -> Bool {
    OwnThread.checkMayBlock("waitForSocketListener")
    let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(timeout))
    while Date() < deadline {
        if let descriptor = connectUnixSocket(path) {
            close(descriptor)
            return true
        }
        if host?.hasExited == true { return false }
        usleep(10_000)
    }
    return false
}

/// Sends `lines` on one connection, ends the write side, and reads
/// everything the host answers until it closes (bounded by `timeout`).
func exchangeOverSocket(_ path: String, lines: [String], timeout: Double = 10) throws -> [String] {
    let descriptor = try sendOverSocket(path, lines: lines)
    defer { close(descriptor) }
    return try readAnswers(descriptor, from: path, timeout: timeout)
}

/// Sends `lines` on a new connection and ends its write side; the caller
/// reads the answers later with `readAnswers` and closes the descriptor.
func sendOverSocket(_ path: String, lines: [String]) throws -> Int32 {
    guard let descriptor = connectUnixSocket(path) else { throw HarnessError("cannot connect to \(path)") }
    let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
    let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard sent == bytes.count else {
        close(descriptor)
        throw HarnessError("short send to \(path)")
    }
    shutdown(descriptor, Int32(SHUT_WR))
    return descriptor
}

/// Reads everything the host answers on `descriptor` until it closes
/// (bounded by `timeout`), as lines.
func readAnswers(_ descriptor: Int32, from path: String, timeout: Double = 10) throws -> [String] {
    OwnThread.checkMayBlock("readAnswers")
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    let deadline = Date(timeIntervalSinceNow: TestTiming.scaled(timeout))
    while true {
        let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, remaining)
        if ready < 0 && errno == EINTR { continue }
        guard ready > 0 else { throw HarnessError("no answer from \(path) within \(timeout) s; got \(received.count) bytes") }
        let count = read(descriptor, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        received.append(contentsOf: chunk[0..<count])
    }
    return ChildProcess.lines(String(decoding: received, as: UTF8.self))
}

/// Reads one line (without its newline) the host answers on `descriptor`,
/// a byte at a time so nothing after it is taken; what came when `timeout`
/// passes or the connection closes.
func readAnswerLine(_ descriptor: Int32, timeout: Double = 10) -> String {
    OwnThread.checkMayBlock("readAnswerLine")
    var line: [UInt8] = []
    var byte: UInt8 = 0
    var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    while poll(&poller, 1, Int32(TestTiming.scaled(timeout) * 1000)) > 0, read(descriptor, &byte, 1) == 1, byte != 10 {
        line.append(byte)
    }
    return String(decoding: line, as: UTF8.self)
}

// MARK: - URL helpers

/// Percent-encodes everything but RFC 3986 unreserved bytes (what the host
/// does for outcome parameters).
func percentEncoded(_ text: String) -> String {
    var result = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "_"), UInt8(ascii: "~"):
            result.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }
    }
    return result
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// Splits a `url`-format record (`success?a=1&b=2`, `app://x?a=1#f`) into
/// its parameters, percent-decoded, in order.
func recordParameters(_ record: String) -> [(name: String, value: String)] {
    guard let question = record.firstIndex(of: "?") else { return [] }
    var query = record[record.index(after: question)...]
    if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
    return query.split(separator: "&").map { pair in
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
        let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
        return (name, value)
    }
}

/// Stretches the tests' time limits by `XCALLBACK_TEST_TIME_SCALE` (default
/// 1). The sanitizers slow the host 3-15 times (`.ci/sanitize` sets it), and
/// a bound that only says "this did not hang" must not fail for that.
enum TestTiming {
    static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["XCALLBACK_TEST_TIME_SCALE"],
              let value = Double(text), value >= 1 else { return 1 }
        return value
    }()

    static func scaled(_ seconds: Double) -> Double { seconds * scale }
}

extension Trait where Self == TimeLimitTrait {
    /// `.timeLimit(.minutes(minutes))` stretched by `TestTiming.scale`: a
    /// test's limit is a hang detector, and must not fire for a slow build.
    static func scaledTimeLimit(minutes: Int) -> Self {
        .timeLimit(.minutes(Int((Double(minutes) * TestTiming.scale).rounded(.up))))
    }
}
