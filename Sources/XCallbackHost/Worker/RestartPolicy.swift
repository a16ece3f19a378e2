/// When a crashed worker is restarted, and when its plug-in is given up on,
/// in the spirit of Erlang/OTP's restart intensity and systemd's start
/// limits: a plug-in that crashes more than `limit` times within `window`
/// is disabled (`PluginUnavailable`) until it is reloaded (SIGHUP) or its
/// file changes. Each restart waits longer than the one before.
public struct RestartPolicy: Sendable, Equatable {
    /// Crashes tolerated within `window`; one more disables the plug-in.
    public var limit: Int = 5
    public var window: Duration = .seconds(60)
    /// The wait before the first restart; doubles with each recent crash.
    public var initialDelay: Duration = .milliseconds(100)
    public var maxDelay: Duration = .seconds(5)

    public init() {}

    /// The wait before restarting after the `recentCrashes`-th crash.
    func delay(afterCrashes recentCrashes: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(recentCrashes, 1) where delay < maxDelay { delay = delay * 2 }
        return min(delay, maxDelay)
    }
}
