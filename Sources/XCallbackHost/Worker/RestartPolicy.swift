/// When a crashed worker is restarted, and when its plug-in is given up on,
/// in the spirit of Erlang/OTP's restart intensity and systemd's start
/// limits: a plug-in that crashes more than `limit` times within `window`
/// is disabled (`PluginUnavailable`) until it is reloaded (SIGHUP) or its
/// file changes.
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

    public init() {}

    /// The wait before restarting after `crashesInARow` crashes: the last
    /// one that was not part of a crash loop counts as 1, each one since adds 1.
    func delay(afterCrashes crashesInARow: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(crashesInARow, 1) where delay < maxDelay { delay = delay * 2 }
        return min(delay, maxDelay)
    }
}
