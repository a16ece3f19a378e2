import XCallbackSystem
/// Why a worker ended before its time: the `cause` label.
public enum WorkerEndCause: Int, Sendable, CaseIterable {
    /// Killed by a signal or exited on its own.
    case crash
    /// Ended by its sandbox for a forbidden system call.
    case sandbox
    /// Died at its memory ceiling.
    case memory
    /// A handler hung past its deadline, and the worker was replaced.
    case hang

    public var label: String {
        switch self {
        case .crash: "crash"
        case .sandbox: "sandbox"
        case .memory: "memory"
        case .hang: "hang"
        }
    }
}

/// What one plug-in did: requests by outcome and code, their latency, and
/// its workers' lives. Every count is an atomic; the label values are the
/// plug-in's name (one per loaded plug-in) and fixed lists.
public final class PluginMetrics: Sendable {
    public let name: String
    /// Successes and cancels, exactly: one relaxed add a request.
    @usableFromInline let outcomes = CounterArray(count: 2)
    /// The latency of the requests timed on the fine clock (a sample: see
    /// `LatencyHistogram`).
    public let latency = LatencyHistogram()
    /// Errors by code label: the `error` row's total, split.
    @usableFromInline let errorCodes = CounterArray(count: ErrorCodeLabel.count)
    public let workerStarts = Counter()
    public let workerRestarts = Counter()
    let workerEnds = CounterArray(count: WorkerEndCause.allCases.count)
    public let quarantines = Counter()
    /// 1 while quarantined.
    let quarantinedNow = Counter()
    /// 1 when it runs in sandboxed worker processes, 0 in process or unsandboxed.
    let sandboxedNow = Counter()
    let violations = Lock<[(call: String, count: UInt64)]>([])

    /// System call names kept apart per plug-in; past them, `other`.
    static let maxViolationNames = 32

    init(name: String) { self.name = name }

    /// Counts one request that ended in `outcome` (`code`: an
    /// `ErrorCodeLabel` index, for errors); and its latency, when it was
    /// timed on the fine clock (nil: not sampled).
    @inlinable
    public func ended(_ outcome: OutcomeClass, code: Int, nanoseconds: UInt64?) {
        if outcome == .error { countError(code: code) } else { outcomes.add(at: outcome == .success ? 0 : 1) }
        if let nanoseconds { observe(nanoseconds) }
    }

    @usableFromInline
    func observe(_ nanoseconds: UInt64) { latency.observe(nanoseconds: nanoseconds) }

    @usableFromInline
    func countError(code: Int) { errorCodes.add(at: min(max(code, 0), ErrorCodeLabel.other)) }

    public func workerEnded(_ cause: WorkerEndCause) { workerEnds.add(at: cause.rawValue) }

    public func quarantined(_ yes: Bool) {
        if yes { quarantines.add() }
        quarantinedNow.set(yes ? 1 : 0)
    }

    public func sandboxed(_ yes: Bool) { sandboxedNow.set(yes ? 1 : 0) }

    /// A sandbox violation by system call `call` (nil: not recorded). Only
    /// names as the kernel's tables spell them are kept, at most
    /// `maxViolationNames` of them; anything else counts as `other`.
    public func violation(call: String?) {
        let label = Self.callLabel(call)
        violations.withLock { list in
            if let index = list.firstIndex(where: { $0.call == label }) {
                list[index].count += 1
            } else if list.count < Self.maxViolationNames {
                list.append((label, 1))
            } else if let index = list.firstIndex(where: { $0.call == "other" }) {
                list[index].count += 1
            } else {
                list[list.count - 1] = ("other", list[list.count - 1].count + 1)
            }
        }
    }

    static func callLabel(_ call: String?) -> String {
        guard let call else { return "unknown" }
        let valid = !call.isEmpty && call.utf8.count <= 32
            && call.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
        return valid ? call : "other"
    }

    // Reading, for the exposition.
    func outcomeCount(_ outcome: OutcomeClass, code: Int = 0) -> UInt64 {
        switch outcome {
        case .success: outcomes.value(at: 0)
        case .cancel: outcomes.value(at: 1)
        case .error: errorCodes.value(at: code)
        }
    }
    func workerEndCount(_ cause: WorkerEndCause) -> UInt64 { workerEnds.value(at: cause.rawValue) }
    var violationCounts: [(call: String, count: UInt64)] { violations.withLock { $0 } }
    var isQuarantined: Bool { quarantinedNow.current != 0 }
    var isSandboxed: Bool { sandboxedNow.current != 0 }
}
