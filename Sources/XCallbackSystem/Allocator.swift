import CHostSupport

/// The process's allocator settings, made once at start-up.
public enum Allocator {
    /// Keeps freed memory in glibc's arenas instead of handing it back at
    /// once. The host's threads free what others allocated (a record built
    /// on the reply thread, a batch on the input thread), and with the
    /// defaults each arena shrank and grew again every few hundred requests:
    /// an `mprotect` each time, most of process mode's system calls.
    public static func keepFreedMemory() {
        xcallback_keep_freed_memory()
    }
}
