import ArgumentParser
import CHostSupport
import XCallbackHost
import XCallbackMetrics
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#endif

/// `xcallback top`: a running host's plug-ins, live, from its metrics.
struct TopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Watch a running host: one row per plug-in, refreshed every second.",
        discussion: """
            Reads the metrics a host serves with `run --metrics ADDRESS` and shows, per plug-in, \
            requests per second, p50 and p99 latency, errors, worker restarts, quarantine and \
            sandbox state. Keys: r rate, p p99, e errors, s restarts, n name (sort); q quits. \
            When stdout is not a terminal, prints one line per plug-in at each refresh instead. \
            Keys are read only when stdin is a terminal; either way SIGINT, SIGTERM and SIGHUP end \
            it (the terminal restored first), and so does the end of a stdin that is a pipe or a \
            socket (a stdin of /dev/null or a file is not read).

            Examples:
              xcallback top                      # the default address, 127.0.0.1:9464
              xcallback top "$XDG_RUNTIME_DIR/xcallback-metrics.sock"
              xcallback top --count 1 | grep quarantined
            """)

    @Argument(help: "The host's --metrics address: HOST:PORT or a Unix socket path.")
    var address = "127.0.0.1:9464"

    @Option(name: .customLong("interval"), help: "Seconds between refreshes.")
    var interval: Double = 1

    @Option(name: .customLong("count"), help: "Stop after this many refreshes (0: until q).")
    var count = 0

    @Option(name: .customLong("sort"), help: "The first order: rate, p99, errors, restarts or name.")
    var sort: TopSortKey = .rate

    func validate() throws {
        if !(interval >= 0.05) { throw ValidationError("--interval must be at least 0.05 seconds") }
        if count < 0 { throw ValidationError("--count cannot be negative") }
        do { _ = try MetricsAddress(parsing: address) } catch { throw ValidationError(error.message) }
    }

    func run() throws {
        let address = try! MetricsAddress(parsing: address)
        // Before the terminal changes: a stop restores it, then ends top.
        let input = TopInput(keys: isatty(1) == 1 && isatty(0) == 1)
        let terminal = isatty(1) == 1 ? TopTerminal() : nil
        defer { terminal?.restore() }
        var order = sort
        var previous: (samples: [ScrapedSample], at: UInt64)?
        var refreshes = 0
        var failure: String?
        while true {
            let now = MonotonicClock.now
            var rows: [TopRow] = []
            var inFlight = 0.0
            do throws(MetricsClient.Failure) {
                let samples = ScrapedSamples.parse(try MetricsClient.fetch(address))
                // A page without the host's build sample is not a host's.
                guard samples.contains(where: { $0.name == "xcallback_build_info" }) else {
                    throw MetricsClient.Failure(message: "\(address) serves no xcallback metrics (no xcallback_build_info sample)")
                }
                let seconds = previous.map { Double(now - $0.at) / 1e9 } ?? 0
                rows = TopTable.rows(current: samples, previous: previous?.samples, seconds: seconds)
                inFlight = samples.first { $0.name == "xcallback_requests_in_flight" }?.value ?? 0
                previous = (samples, now)
                failure = nil
            } catch {
                // The first scrape must work; later, a host that went away is said.
                guard previous != nil else {
                    terminal?.restore()
                    guard error.nobodyListens else { throw Failure.exit(PrintableText.escaping(error.message)) }
                    throw Failure.exit("\(PrintableText.escaping(error.message)): no host serves metrics there (start one with: "
                        + "xcallback run --metrics \(ShellWord.quoted(address.description)) --socket PATH, or name its address: xcallback top ADDRESS)")
                }
                failure = error.message
            }
            refreshes += 1
            if let terminal {
                terminal.draw(header: "xcallback top - \(address) - in flight \(TopTable.count(inFlight)) - sorted by \(order.rawValue)",
                              keys: "keys: r rate  p p99  e errors  s restarts  n name  q quit",
                              rows: order.ordered(rows), failure: failure)
            } else {
                let time = UTCTimestamp.now()
                if let failure { Failure.note(PrintableText.escaping(failure)) }
                var text = ""
                for row in order.ordered(rows) { text += TopTable.plainLine(row, time: time) + "\n" }
                _ = text.withCString { write(1, $0, strlen($0)) }
            }
            if count > 0 && refreshes >= count { return }
            // Until the next refresh: keys on a terminal, a stop, the end of input.
            let deadline = now + UInt64(interval * 1e9)
            while true {
                let left = MonotonicClock.now
                guard left < deadline else { break }
                guard let event = input.next(waitingMilliseconds: Int32((deadline - left) / 1_000_000) + 1) else { continue }
                let key: Character
                switch event {
                case .endOfInput: return
                case .signal(let signal):
                    terminal?.restore()
                    input.die(of: signal)
                case .key(let pressed): key = pressed
                }
                guard let terminal else { continue }
                if key == "q" || key == "Q" || key == "\u{03}" { return }
                if let chosen = TopSortKey.allCases.first(where: { $0.key == key }) {
                    order = chosen
                    terminal.draw(header: "xcallback top - \(address) - in flight \(TopTable.count(inFlight)) - sorted by \(order.rawValue)",
                                  keys: "keys: r rate  p p99  e errors  s restarts  n name  q quit",
                                  rows: order.ordered(rows), failure: failure)
                }
            }
        }
    }
}

extension TopSortKey: ExpressibleByArgument {}

/// The terminal `top` draws on: raw keys, the alternate screen, no cursor;
/// all restored when it ends.
final class TopTerminal {
    private var saved = termios()
    private let hasInput: Bool
    private var restored = false

    init() {
        hasInput = isatty(0) == 1 && tcgetattr(0, &saved) == 0
        if hasInput {
            var raw = saved
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
            tcsetattr(0, TCSANOW, &raw)
        }
        emit("\u{1B}[?1049h\u{1B}[?25l")
    }

    func restore() {
        guard !restored else { return }
        restored = true
        emit("\u{1B}[?25h\u{1B}[?1049l")
        if hasInput { tcsetattr(0, TCSANOW, &saved) }
    }

    var width: Int {
        var size = winsize()
        return ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 120
    }

    /// One screen. Every text is escaped (`PrintableText`) before it is
    /// shown: the server is not trusted, and a label or message of its with
    /// a control sequence would otherwise drive the terminal (its title, its
    /// clipboard). The only controls written are top's own.
    func draw(header: String, keys: String, rows: [TopRow], failure: String?) {
        let width = self.width
        var text = "\u{1B}[H\u{1B}[2J"
        text += String(PrintableText.escaping(header).prefix(width)) + "\n"
        text += String(keys.prefix(width)) + "\n"
        if let failure { text += String(("! " + PrintableText.escaping(failure)).prefix(width)) + "\n" }
        text += "\n"
        for line in TopTable.lines(rows, width: width) { text += line + "\n" }
        emit(text)
    }

    private func emit(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { BufferedWriter.writeAll(1, UnsafeRawBufferPointer($0)) }
    }
}

/// What `top` waits for between refreshes: keys, when stdin is the
/// terminal it draws on; SIGINT, SIGTERM and SIGHUP, taken from a signalfd
/// so that the terminal is given back before top dies of the signal; and
/// the end of a stdin that is a pipe or a socket (whoever started top
/// closed it). A stdin of /dev/null or a file is never read: a background
/// job's stdin is /dev/null, and it must not end at once.
final class TopInput {
    enum Event {
        case key(Character)
        case signal(Int32)
        case endOfInput
    }

    private static let stops: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    private let signals: Int32
    private let keys: Bool
    private var watchesEnd: Bool

    init(keys: Bool) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in Self.stops { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        signals = xcallback_signal_descriptor(&set)
        if signals < 0 { pthread_sigmask(SIG_UNBLOCK, &set, nil) }
        self.keys = keys
        var info = stat()
        let kind = fstat(0, &info) == 0 ? info.st_mode & S_IFMT : 0
        watchesEnd = !keys && (kind == S_IFIFO || kind == S_IFSOCK)
    }

    /// The next event within `waitingMilliseconds`, or nil.
    func next(waitingMilliseconds: Int32) -> Event? {
        var fds = [pollfd(fd: signals, events: Int16(POLLIN), revents: 0)]
        if keys || watchesEnd { fds.append(pollfd(fd: 0, events: Int16(POLLIN), revents: 0)) }
        let ready = poll(&fds, nfds_t(fds.count), max(waitingMilliseconds, 0))
        guard ready > 0 else { return nil }
        if fds[0].revents != 0 {
            let signal = xcallback_read_signal(signals)
            return signal > 0 ? .signal(signal) : nil
        }
        guard fds.count > 1, fds[1].revents != 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: keys ? 1 : 4096)
        let count = bytes.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return nil }
        guard count > 0 else {
            if keys {
                // The terminal went away: nothing to quit with but signals.
                usleep(UInt32(max(waitingMilliseconds, 0)) * 1000)
                return nil
            }
            return .endOfInput
        }
        // From a pipe, bytes are not keys: only its end counts.
        return keys ? .key(Character(Unicode.Scalar(bytes[0]))) : nil
    }

    /// Dies of `signal`, as if it had not been caught (the exit status a
    /// shell expects of an interrupted program).
    func die(of stop: Int32) -> Never {
        signal(stop, SIG_DFL)
        raise(stop)  // pending while blocked; delivered once unblocked
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, stop)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        _exit(128 + stop)
    }
}
