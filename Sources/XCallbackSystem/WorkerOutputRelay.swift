import CHostSupport
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Gives each worker a stdout and a stderr of its own, pipes the host
/// reads, and logs what comes out of them.
///
/// A worker never holds one of the host's descriptors: an open file
/// description is shared state. A plug-in that held the host's stderr
/// could set O_NONBLOCK on it (the host's next record write then fails),
/// make itself the terminal's foreground group, read the pipe the host's
/// log goes to, or `ftruncate` and `pwrite` the file the host's records
/// go to. On a pipe the host owns, a plug-in can only spoil its own output:
/// each line is escaped, cut at `OutputLines.maxLength` and rate-limited
/// (`OutputRateLimit`) before it reaches the host's log, tagged with the
/// plug-in's name and the stream.
///
/// One thread reads every worker's pipes (`poll`), so a hundred plug-ins
/// cost one thread, not two hundred. It reads at most `bytesPerSecond` of
/// one worker's output a second: past that it leaves the pipe alone until
/// the next second, so a plug-in that writes as fast as it can blocks on
/// its own full pipe instead of spending the host's time.
public final class WorkerOutputRelay: Sendable {
    /// The ends a new worker gets as its stdout and stderr, and the handle
    /// that names it in the log.
    public struct ChildEnds: Sendable {
        public let stdout: Int32
        public let stderr: Int32
        public let channel: Channel

        /// Closes the host's copies once the child has its own.
        public func closeInHost() {
            closeDescriptor(stdout)
            closeDescriptor(stderr)
        }
    }

    /// One worker's two streams: its name in the log, and the lines it may
    /// still log this second (shared by both streams).
    public final class Channel: Sendable {
        private let label: Lock<String>
        fileprivate let limit: Lock<OutputRateLimit>
        /// Bytes read this second, and when the second began.
        fileprivate let budget = Lock((spent: 0, since: UInt64(0)))

        fileprivate init(label: String) {
            self.label = Lock(label)
            limit = Lock(OutputRateLimit(now: MonotonicClock.now))
        }

        /// Counts `count` bytes read at `now`; true once the second's budget
        /// is spent (`pausedUntil` then says until when).
        fileprivate func spend(_ count: Int, now: UInt64) -> Bool {
            budget.withLock { budget in
                if now &- budget.since >= 1_000_000_000 { budget = (0, now) }
                budget.spent += count
                return budget.spent >= WorkerOutputRelay.bytesPerSecond
            }
        }

        /// Until when its pipes are left alone (0: not).
        fileprivate func pausedUntil(now: UInt64) -> UInt64 {
            budget.withLock { budget in
                budget.spent >= WorkerOutputRelay.bytesPerSecond && now &- budget.since < 1_000_000_000
                    ? budget.since + 1_000_000_000 : 0
            }
        }

        /// The plug-in's own name, once its worker has said it.
        public func rename(_ name: String) { label.withLock { $0 = name } }

        public var name: String { label.withLock { $0 } }
    }

    private final class Source: @unchecked Sendable {
        // @unchecked: only the relay thread touches `lines`.
        let descriptor: Int32
        let stream: String
        let channel: Channel
        /// Open as long as the host runs (the zygote's): not waited for.
        let lingers: Bool
        var lines = OutputLines()

        init(descriptor: Int32, stream: String, channel: Channel, lingers: Bool) {
            self.descriptor = descriptor
            self.stream = stream
            self.channel = channel
            self.lingers = lingers
        }
    }

    /// Bytes of one worker's output read a second, at most.
    public static let bytesPerSecond = 1 << 20

    private let logger: Logger
    private let sources = ConditionLock<[Source]>([])
    /// Written to when `sources` changed, so the poll picks the new ones up.
    private let wake: (read: Int32, write: Int32)
    private let started = Lock(false)

    public init(logger: Logger) {
        self.logger = logger
        var ends: [Int32] = [-1, -1]
        if xcallback_pipe_cloexec(&ends) == 0 {
            _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
            _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        }
        wake = (ends[0], ends[1])
    }

    /// Two new pipes for a worker labelled `label` (its plug-in file until
    /// it names itself); nil when the host is out of descriptors (the
    /// caller then gives the worker `/dev/null`). `lingers`: the writer
    /// lives as long as the host (`waitUntilRelayed` does not wait for it).
    public func open(label: String, lingers: Bool = false) -> ChildEnds? {
        var stdout: [Int32] = [-1, -1]
        var stderr: [Int32] = [-1, -1]
        guard wake.read >= 0, xcallback_pipe_cloexec(&stdout) == 0 else { return nil }
        guard xcallback_pipe_cloexec(&stderr) == 0 else {
            stdout.forEach { _ = close($0) }
            return nil
        }
        // The host's ends never block the relay; the worker's ends are its
        // own descriptions, whatever it sets on them.
        _ = fcntl(stdout[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(stderr[0], F_SETFL, O_NONBLOCK)
        let channel = Channel(label: label)
        sources.withLock {
            $0.append(Source(descriptor: stdout[0], stream: "stdout", channel: channel, lingers: lingers))
            $0.append(Source(descriptor: stderr[0], stream: "stderr", channel: channel, lingers: lingers))
        }
        startIfNeeded()
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        return ChildEnds(stdout: stdout[1], stderr: stderr[1], channel: channel)
    }

    private func startIfNeeded() {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        if first { Threads.detach { [self] in run() } }
    }

    private func run() {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let now = MonotonicClock.now
            var watched: [Source] = []
            var wakeAt = UInt64.max
            for source in sources.withLock({ $0 }) {
                let paused = source.channel.pausedUntil(now: now)
                if paused == 0 { watched.append(source) } else { wakeAt = min(wakeAt, paused) }
            }
            var events = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            events += watched.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            let timeout = wakeAt == .max ? -1 : Int32(clamping: (wakeAt &- now) / 1_000_000 + 1)
            if poll(&events, nfds_t(events.count), timeout) < 0 {
                if errno == EINTR { continue }
                return
            }
            if events[0].revents != 0 {
                while read(wake.read, chunk.baseAddress, chunk.count) > 0 {}
            }
            var ended: [Int32] = []
            for (source, event) in zip(watched, events.dropFirst()) where event.revents != 0 {
                if drain(source, into: chunk) { ended.append(source.descriptor) }
            }
            guard !ended.isEmpty else { continue }
            sources.withLock { $0.removeAll { ended.contains($0.descriptor) } }
            sources.broadcast()
            ended.forEach { _ = close($0) }
        }
    }

    /// Waits until everything the workers that exited wrote is logged (their
    /// pipes ended), or `deadline`: the host's last lines before it exits.
    public func waitUntilRelayed(until deadline: UInt64) {
        sources.wait(until: { $0.allSatisfy(\.lingers) }, deadline: deadline) { _ in }
    }

    /// Reads what `source` has; true once it has ended (every writer, the
    /// worker and what it started, closed it).
    private func drain(_ source: Source, into chunk: UnsafeMutableRawBufferPointer) -> Bool {
        // A bounded number of reads a turn, so one chatty worker cannot
        // keep the others' lines waiting.
        for _ in 0..<16 {
            let count = read(source.descriptor, chunk.baseAddress, chunk.count)
            if count > 0 {
                source.lines.take(UnsafeRawBufferPointer(rebasing: chunk[..<count])) { log($0, from: source) }
                if source.channel.spend(count, now: MonotonicClock.now) { return false }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return false }
            source.lines.end { log($0, from: source) }
            let dropped = source.channel.limit.withLock { $0.takeDropped() }
            if dropped > 0 { reportDropped(dropped, from: source) }
            return true
        }
        return false
    }

    private func log(_ line: OutputLines.Line, from source: Source) {
        let (admitted, droppedBefore) = source.channel.limit.withLock { $0.admit(now: MonotonicClock.now) }
        if droppedBefore > 0 { reportDropped(droppedBefore, from: source) }
        guard admitted else { return }
        Self.log(line, plugin: source.channel.name, stream: source.stream, to: logger)
    }

    /// Logs one line a plug-in printed: escaped and cut again (an escape
    /// takes up to four times the bytes), at the level a worker's own log
    /// line names but never above `warning` (a plug-in's word cannot raise
    /// an operator's alarm), tagged with the plug-in and stream.
    public static func log(_ line: OutputLines.Line, plugin: String, stream: String, to logger: Logger) {
        let escaped = PrintableText.escaping(String(decoding: line.text, as: UTF8.self))
        let (named, message) = WorkerLogHandler.level(of: escaped[...])
        var text = String(message.prefix(OutputLines.maxLength))
        let cut = line.cut + (message.count - text.count)
        if cut > 0 { text += " [\(cut) more cut]" }
        logger.log(level: min(named, .warning), "\(text)",
                   metadata: ["plugin": .string(PrintableText.escaping(String(plugin.prefix(64)))), "stream": .string(stream)])
    }

    private func reportDropped(_ count: Int, from source: Source) {
        logger.warning("plug-in '\(PrintableText.escaping(source.channel.name))' wrote \(count) more line(s) than the host logs (\(OutputRateLimit.rate) a second): dropped")
    }
}

private func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }
