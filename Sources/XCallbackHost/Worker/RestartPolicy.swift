/// When a crashed worker is restarted, and when its plug-in is given up on,
/// in the spirit of Erlang/OTP's restart intensity and systemd's start
/// limits: a plug-in that crashes more than `limit` times within `window`
/// is quarantined (`PluginUnavailable`) for a cool-down, then tried
/// again; each quarantine in a row doubles the cool-down, up to
/// `maxCooldown`. SIGHUP or a change of its file ends a quarantine at once.
/// A quarantine is a lever, not a verdict: without the cool-down, six
/// crashing requests from any client would disable a plug-in for everyone
/// until an operator stepped in.
///
/// The restart delay grows only for a crash loop: workers that die with no
/// request in flight and nothing answered (in a constructor, a background
/// thread, killed from outside), where restarting at once would just spin.
/// A worker killed by a request it ran, or one that answered requests
/// before it died, is restarted after the initial delay: growing the delay
/// there would only make the requests waiting for it time out, and the
/// next crash batch bigger. The restart limit bounds both.
public struct RestartPolicy: Sendable, Equatable {
    /// Crashes tolerated within `window`; one more disables the plug-in.
    public var limit: Int = 5
    public var window: Duration = .seconds(60)
    /// The wait before a restart; doubles with each death in a row of an
    /// idle worker that answered nothing, up to `maxDelay`.
    public var initialDelay: Duration = .milliseconds(100)
    public var maxDelay: Duration = .seconds(5)
    /// How long the first quarantine lasts.
    public var cooldown: Duration = .seconds(30)
    /// The longest quarantine.
    public var maxCooldown: Duration = .seconds(600)

    public init() {}

    /// The cool-down of the `quarantinesInARow`-th quarantine (1 for the
    /// first): doubles each time, up to `maxCooldown`.
    func cooldown(afterQuarantines quarantinesInARow: Int) -> Duration {
        var cooldown = self.cooldown
        for _ in 1..<max(quarantinesInARow, 1) where cooldown < maxCooldown { cooldown = cooldown * 2 }
        return min(cooldown, maxCooldown)
    }

    /// A quarantine that starts this long after the previous one began is
    /// the first of a new series: the plug-in behaved in between.
    var quarantineMemory: Duration { maxCooldown }

    /// The wait before restarting after `crashesInARow` crashes: the last
    /// one that was not part of a crash loop counts as 1, each one since adds 1.
    func delay(afterCrashes crashesInARow: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(crashesInARow, 1) where delay < maxDelay { delay = delay * 2 }
        return min(delay, maxDelay)
    }
}
