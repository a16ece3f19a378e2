import Synchronization
import XCallbackURL

/// How the records written so far ended: the numbers of the summary line.
/// `crashed` and `timedOut` are subsets of `failed`.
public struct OutcomeCounts: Sendable, Equatable {
    public var succeeded: UInt64 = 0
    /// Every error outcome, the host's and the plug-ins' own.
    public var failed: UInt64 = 0
    public var cancelled: UInt64 = 0
    /// `PluginCrashed` errors of the host (domain `xcallback`).
    public var crashed: UInt64 = 0
    /// `Timeout` errors of the host (domain `xcallback`).
    public var timedOut: UInt64 = 0

    public init(succeeded: UInt64 = 0, failed: UInt64 = 0, cancelled: UInt64 = 0,
                crashed: UInt64 = 0, timedOut: UInt64 = 0) {
        self.succeeded = succeeded
        self.failed = failed
        self.cancelled = cancelled
        self.crashed = crashed
        self.timedOut = timedOut
    }

    /// Records written: every record has exactly one of the three outcomes.
    public var processed: UInt64 { succeeded + failed + cancelled }

    /// `processed 12, succeeded 9, failed 2 (crashed 1, timed out 0), cancelled 1`.
    public var summary: String {
        "processed \(processed), succeeded \(succeeded), failed \(failed) (crashed \(crashed), timed out \(timedOut)), cancelled \(cancelled)"
    }
}

/// Counts records as they are written, from any thread. Each record costs
/// one relaxed atomic increment (two for a crash or a timeout): it sits on
/// the hot path of every request.
public final class OutcomeTally: Sendable {
    private let succeeded = Atomic<UInt64>(0)
    private let failed = Atomic<UInt64>(0)
    private let cancelled = Atomic<UInt64>(0)
    private let crashed = Atomic<UInt64>(0)
    private let timedOut = Atomic<UInt64>(0)

    public init() {}

    /// Counts one written success or cancel record (errors need their code).
    public func count(answered kind: OutcomeKind) {
        precondition(kind != .error, "an error record is counted with its outcome")
        if kind == .success {
            succeeded.wrappingAdd(1, ordering: .relaxed)
        } else {
            cancelled.wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// Counts one written record.
    public func count(_ outcome: Outcome) {
        switch outcome.kind {
        case .success:
            succeeded.wrappingAdd(1, ordering: .relaxed)
        case .cancel:
            cancelled.wrappingAdd(1, ordering: .relaxed)
        case .error:
            if outcome.value("errorDomain") == HostError.domain {
                switch outcome.value("errorCode") {
                case "PluginCrashed": crashed.wrappingAdd(1, ordering: .relaxed)
                case "Timeout": timedOut.wrappingAdd(1, ordering: .relaxed)
                default: break
                }
            }
            failed.wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// The counts so far. Taken while records are still being written, the
    /// numbers may be a few records apart from one another.
    public var snapshot: OutcomeCounts {
        // Relaxed loads may see a subset counter ahead of `failed`: clamp.
        let failed = failed.load(ordering: .relaxed)
        return OutcomeCounts(
            succeeded: succeeded.load(ordering: .relaxed),
            failed: failed,
            cancelled: cancelled.load(ordering: .relaxed),
            crashed: min(crashed.load(ordering: .relaxed), failed),
            timedOut: min(timedOut.load(ordering: .relaxed), failed))
    }
}
