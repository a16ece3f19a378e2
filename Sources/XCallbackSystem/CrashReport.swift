import CHostSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a host that crashes ends: one line on stderr naming the signal (and
/// the in-process plug-in whose handler the crashing thread was running),
/// then death by that signal, so the exit status shows it.
///
/// Without this, the Swift runtime's backtracer takes the signal: it stops
/// every thread, starts `swift-backtrace`, and symbolicates, which kept a
/// crashed host alive for many seconds (a queue's hosts held their leases
/// meanwhile) and is noise to anyone not debugging xcallback itself. The
/// runtime reads `SWIFT_BACKTRACE` once, before `main`; so the host replaces
/// its handlers, and keeps them behind the line when the user set
/// `SWIFT_BACKTRACE` (`enable=yes` then prints a backtrace after the line).
public enum CrashReport {
    /// Installs the handlers (`run` calls it before loading plug-ins).
    /// Workers and probes are not hosts: their crash is the host's to report.
    public static func install(format: LogFormat) {
        let userAskedForBacktraces = getenv("SWIFT_BACKTRACE") != nil
        _ = xcallback_install_crash_report(userAskedForBacktraces ? 1 : 0, format == .json ? 1 : 0)
    }

    /// Interned plug-in names as C strings: the crash handler reads one on
    /// the crashing thread, so each must outlive any request (plug-ins are
    /// never unloaded; a name is kept once however often it reloads).
    private static let names = Lock<[String: PluginMark]>([:])

    /// The mark for the plug-in named `name`.
    public static func mark(for name: String) -> PluginMark {
        names.withLock { names in
            if let mark = names[name] { return mark }
            let mark = PluginMark(name: UnsafePointer(strdup(name)!))
            names[name] = mark
            return mark
        }
    }
}

/// Marks a thread as running an in-process plug-in's code, for the crash
/// line: two thread-local stores around each call, nothing else.
public struct PluginMark: @unchecked Sendable {
    // @unchecked: an immutable C string that is never freed.
    public let name: UnsafePointer<CChar>

    /// Runs `body` (a call into the plug-in) with the thread marked.
    /// Inlinable: it wraps every in-process handler call, from another module.
    @inlinable @inline(__always)
    public func whileRunning<R>(_ body: () throws -> R) rethrows -> R {
        let outer = xcallback_enter_plugin(name)
        defer { xcallback_leave_plugin(outer) }
        return try body()
    }
}
