import CHostSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who may talk to this host, and to whom its clients may talk: a FIFO or
/// socket is a door into the host, and requests carry what callers trust it
/// with (correlation tokens, data for plug-ins). Only the host's own user
/// and root pass, on both ends of a socket (SO_PEERCRED) and as the owner
/// of a FIFO.
public enum LocalPeer {
    /// Whether `uid` may be on the other end: ours, or root's.
    public static func isTrusted(_ uid: uid_t) -> Bool { uid == geteuid() || uid == 0 }

    /// The uid of the process at the other end of a connected Unix socket.
    public static func uid(of socket: Int32) -> uid_t? {
        var uid: UInt32 = 0
        return xcallback_peer_uid(socket, &uid) == 0 ? uid_t(uid) : nil
    }

    /// Why the FIFO open on `descriptor` must not be used, or nil: it must
    /// be ours (or root's) and closed to group and others, or someone else
    /// could write requests into it, or read the ones meant for the host.
    public static func problem(withFIFO descriptor: Int32, path: String) -> String? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        guard (info.st_mode & S_IFMT) == S_IFIFO else { return "\(path) is not a FIFO" }
        if !isTrusted(info.st_uid) {
            return "\(path) is owned by another user (uid \(info.st_uid)); use a FIFO of your own"
        }
        if info.st_mode & 0o077 != 0 {
            return "\(path) is open to other users (mode 0\(String(info.st_mode & 0o777, radix: 8))); run chmod 600 \(path)"
        }
        return nil
    }
}
