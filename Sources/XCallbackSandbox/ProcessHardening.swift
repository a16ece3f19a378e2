import CSandbox

/// What the host does to itself.
public enum ProcessHardening {
    /// Makes this process non-dumpable: no core file of its memory, and
    /// other processes of the same user (a plug-in's worker among them, were
    /// its sandbox to fail) can no longer ptrace it or open its
    /// `/proc/PID/fd`, `mem` or `environ`, so they cannot write a forged
    /// record into its stdout or a forged request into its stdin.
    public static func makeNondumpable() {
        _ = xcallback_make_nondumpable()
    }
}
