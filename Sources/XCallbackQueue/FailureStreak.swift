#if Queue  // the package's Queue trait: swift build --traits Queue

/// One connection's run of failures, from the first to the next success:
/// how long to wait before the next attempt, and when to say so. The
/// first failure is reported at once; while it repeats, a report with the
/// count follows after 10 s, then after 20 s, 40 s … at most every 10
/// minutes; the success that ends it is reported with the count. A
/// database that fails every statement (a full disk) then costs a handful
/// of log lines, not one per attempt.
///
/// Only a successful statement ends a streak, not a successful connect: a
/// server that accepts connections and fails every statement must back
/// off like one that is down.
struct FailureStreak {
    /// Failed attempts in this streak (0: none).
    private(set) var count = 0
    private var started = ContinuousClock.now
    private var nextReport = ContinuousClock.now
    private var reportInterval = Self.firstReportInterval

    static let firstReportInterval: Duration = .seconds(10)
    static let longestReportInterval: Duration = .seconds(600)
    static let firstDelay: Duration = .milliseconds(50)
    static let longestDelay: Duration = .seconds(5)

    enum Report: Equatable {
        /// The first failure of a streak: say what failed.
        case first
        /// Still failing: `count` attempts over `duration`.
        case repeated(count: Int, duration: Duration)
        /// Nothing to say this time.
        case quiet
    }

    /// Counts a failure at `now`; what to log about it.
    mutating func failed(at now: ContinuousClock.Instant = .now) -> Report {
        count += 1
        if count == 1 {
            started = now
            reportInterval = Self.firstReportInterval
            nextReport = now + reportInterval
            return .first
        }
        guard now >= nextReport else { return .quiet }
        reportInterval = min(reportInterval * 2, Self.longestReportInterval)
        nextReport = now + reportInterval
        return .repeated(count: count, duration: now - started)
    }

    /// Ends the streak at `now`: its failed attempts and how long it
    /// lasted, or nil when there was none.
    mutating func succeeded(at now: ContinuousClock.Instant = .now) -> (count: Int, duration: Duration)? {
        guard count > 0 else { return nil }
        defer { count = 0 }
        return (count, now - started)
    }

    /// The wait before the next attempt: 50 ms doubling with each failure
    /// up to 5 s, less up to a fifth at random so that hosts that failed
    /// together do not all come back in the same instant.
    var delay: Duration {
        guard count > 0 else { return .zero }
        let full = min(Self.firstDelay * (1 << min(count - 1, 12)), Self.longestDelay)
        return full * Double.random(in: 0.8...1.0)
    }
}

extension Duration {
    /// "3.2 s", "12 s", "4 min 5 s": a duration for a log line.
    var spoken: String {
        let seconds = self.seconds
        if seconds < 10 { return "\((seconds * 10).rounded() / 10) s" }
        let whole = Int(seconds.rounded())
        if whole < 120 { return "\(whole) s" }
        return "\(whole / 60) min \(whole % 60) s"
    }
}
#endif
