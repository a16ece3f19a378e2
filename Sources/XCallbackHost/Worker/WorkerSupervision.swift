/// What a plug-in's workers' deaths add up to, and what to do after the
/// next one: restart after a delay, or quarantine the plug-in
/// (`RestartPolicy`). A value with no clock and no process of its own, so
/// its decisions can be tried death by death (`WorkerSupervisionTests`).
struct WorkerSupervision: Sendable, Equatable {
    /// What follows a worker's death.
    enum Decision: Equatable {
        case restart(after: Duration)
        /// The plug-in is disabled for `cooldown`; `number` names this
        /// quarantine, so only its own cool-down ends it.
        case quarantine(cooldown: Duration, number: Int, crashes: Int)
    }

    let policy: RestartPolicy
    /// When the deaths within the policy's window happened (monotonic ns).
    private(set) var crashTimes: [UInt64] = []
    /// Deaths since (and including) the last one a request explains (in
    /// flight, or answered before): what the restart delay grows with.
    private(set) var crashesInARow = 0
    private(set) var quarantinesInARow = 0
    private(set) var lastQuarantine: UInt64?
    private(set) var quarantineNumber = 0

    init(policy: RestartPolicy) { self.policy = policy }

    /// A worker died at `now`. `explained`: it had a request in flight, or
    /// had answered one, so its death is no crash loop of an idle worker.
    mutating func workerDied(at now: UInt64, explained: Bool) -> Decision {
        crashTimes.append(now)
        crashTimes.removeAll { now &- $0 > policy.window.nanoseconds }
        crashesInARow = explained ? 1 : crashesInARow + 1
        guard crashTimes.count > policy.limit else { return .restart(after: policy.delay(afterCrashes: crashesInARow)) }
        // A plug-in that behaved since its last quarantine starts a new series.
        if let last = lastQuarantine, now &- last > policy.quarantineMemory.nanoseconds { quarantinesInARow = 0 }
        quarantinesInARow += 1
        lastQuarantine = now
        quarantineNumber += 1
        return .quarantine(cooldown: policy.cooldown(afterQuarantines: quarantinesInARow), number: quarantineNumber,
                           crashes: crashTimes.count)
    }

    /// The plug-in is enabled again: by an operator (SIGHUP, a new file),
    /// which also forgets earlier quarantines, or at the end of a cool-down.
    mutating func forgive(byOperator: Bool) {
        crashTimes.removeAll()
        crashesInARow = 0
        if byOperator { quarantinesInARow = 0 }
    }
}
