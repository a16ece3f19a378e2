#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The progress line of `run` reading a file with stderr on a terminal:
/// `xcallback: 41200 done, 42% read, 20511/s, 3 errors`, rewritten in place
/// a few times a second by its own thread. It reads only atomic counters
/// and the input's file offset, so the requests' path pays nothing for it.
public final class ProgressReporter: Sendable {
    private struct State {
        var started = false
        var stopping = false
        var finished = false
    }

    private let console: DiagnosticConsole
    private let input: Int32
    private let interval: UInt64
    private let counts: @Sendable () -> OutcomeCounts
    private let state = ConditionLock(State())

    /// Samples the rate is measured over: about the last second.
    private static let rateWindow = 5

    /// - Parameters:
    ///   - input: the file being read; its offset against its size is the
    ///     share read (the reader's read-ahead makes that a little early).
    ///   - counts: the outcome counts so far.
    public init(console: DiagnosticConsole, input: Int32, interval: Duration = .milliseconds(200),
                counts: @escaping @Sendable () -> OutcomeCounts) {
        self.console = console
        self.input = input
        self.interval = interval.nanoseconds
        self.counts = counts
    }

    /// Whether a run reading `input` and writing diagnostics to `diagnostics`
    /// should show a progress line: a regular file read by a person watching
    /// a terminal. Anything else (a pipe, a log file) stays silent.
    public static func isWanted(input: Int32, diagnostics: Int32) -> Bool {
        var info = stat()
        guard fstat(input, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return isatty(diagnostics) == 1
    }

    /// Starts the thread; the first line appears after one interval, so a
    /// run that ends sooner never shows one.
    public func start() {
        state.withLock { $0.started = true }
        Threads.detach { [self] in run() }
    }

    /// Stops the thread, waits for it (bounded), and erases the line.
    public func stop() {
        let started = state.withLock { state in
            state.stopping = true
            return state.started
        }
        state.broadcast()
        if started {
            let deadline = MonotonicClock.now + 2_000_000_000
            state.wait(until: { $0.finished }, deadline: deadline) { _ in }
        }
        console.clearStatus()
    }

    private func run() {
        var samples: [(time: UInt64, done: UInt64)] = [(MonotonicClock.now, counts().processed)]
        while true {
            let stopping = state.wait(until: { $0.stopping }, deadline: MonotonicClock.now + interval) { $0.stopping }
            if stopping { break }
            let now = MonotonicClock.now
            let current = counts()
            samples.append((now, current.processed))
            if samples.count > Self.rateWindow + 1 { samples.removeFirst() }
            let oldest = samples[0]
            let seconds = Double(now - oldest.time) / 1e9
            let done = current.processed >= oldest.done ? current.processed - oldest.done : 0
            let rate = seconds > 0 ? Double(done) / seconds : 0
            console.showStatus(Self.line(done: current.processed, percentRead: percentRead(),
                                         rate: rate, errors: current.failed))
        }
        state.withLock { $0.finished = true }
        state.broadcast()
    }

    /// How much of the input file was read, when it can be known.
    private func percentRead() -> Int? {
        var info = stat()
        let offset = lseek(input, 0, SEEK_CUR)
        guard offset >= 0, fstat(input, &info) == 0, info.st_size > 0 else { return nil }
        return Int(min(100, Int64(offset) * 100 / Int64(info.st_size)))
    }

    /// The text of one progress line (no newline).
    public static func line(done: UInt64, percentRead: Int?, rate: Double, errors: UInt64) -> String {
        var parts = ["\(done) done"]
        if let percentRead { parts.append("\(percentRead)% read") }
        parts.append("\(Int(rate.rounded()))/s")
        parts.append(errors == 1 ? "1 error" : "\(errors) errors")
        return "xcallback: " + parts.joined(separator: ", ")
    }
}
