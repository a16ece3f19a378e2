import ArgumentParser
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
            When stdout is not a terminal, prints one line per plug-in at each refresh instead.

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
            do {
                let samples = ScrapedSamples.parse(try MetricsClient.fetch(address))
                let seconds = previous.map { Double(now - $0.at) / 1e9 } ?? 0
                rows = TopTable.rows(current: samples, previous: previous?.samples, seconds: seconds)
                inFlight = samples.first { $0.name == "xcallback_requests_in_flight" }?.value ?? 0
                previous = (samples, now)
                failure = nil
            } catch {
                // The first scrape must work; later, a host that went away is said.
                guard previous != nil else {
                    terminal?.restore()
                    throw Failure.exit(error.message)
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
                if let failure { Failure.note(failure) }
                var text = ""
                for row in order.ordered(rows) { text += TopTable.plainLine(row, time: time) + "\n" }
                _ = text.withCString { write(1, $0, strlen($0)) }
            }
            if count > 0 && refreshes >= count { return }
            // Until the next refresh: keys, when there is a terminal.
            let deadline = now + UInt64(interval * 1e9)
            while true {
                let left = MonotonicClock.now
                guard left < deadline else { break }
                guard let terminal else {
                    usleep(UInt32(min((deadline - left) / 1000, 1_000_000)))
                    continue
                }
                guard let key = terminal.key(waitingMilliseconds: Int32((deadline - left) / 1_000_000) + 1) else { continue }
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

    func draw(header: String, keys: String, rows: [TopRow], failure: String?) {
        let width = self.width
        var text = "\u{1B}[H\u{1B}[2J"
        text += String(header.prefix(width)) + "\n"
        text += String(keys.prefix(width)) + "\n"
        if let failure { text += String(("! " + failure).prefix(width)) + "\n" }
        text += "\n"
        for line in TopTable.lines(rows, width: width) { text += line + "\n" }
        emit(text)
    }

    /// A key pressed within `waitingMilliseconds`, or nil.
    func key(waitingMilliseconds: Int32) -> Character? {
        guard hasInput else {
            usleep(UInt32(max(waitingMilliseconds, 0)) * 1000)
            return nil
        }
        var event = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&event, 1, waitingMilliseconds) > 0 else { return nil }
        var byte: UInt8 = 0
        guard read(0, &byte, 1) == 1 else {
            // Input closed: wait out the interval instead of spinning.
            usleep(UInt32(max(waitingMilliseconds, 0)) * 1000)
            return nil
        }
        return Character(Unicode.Scalar(byte))
    }

    private func emit(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { BufferedWriter.writeAll(1, UnsafeRawBufferPointer($0)) }
    }
}
