#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The user and group a root host's workers run as (`--worker-user`).
///
/// A worker of a root host that kept uid 0 would keep root's ownership of
/// every file: a read-only bind stops a write, but not a `chmod` through a
/// descriptor it was handed, and one missed rule would be a root escalation.
/// So it becomes an unprivileged id that owns nothing outside, after its
/// file view is built and before any plug-in code runs, and keeps no
/// capability in the initial user namespace. A host that is not root needs
/// none of this: its workers keep its uid, inside a user namespace of their
/// own where the kernel lends one.
public struct WorkerIdentity: Sendable, Equatable {
    public var uid: UInt32
    public var gid: UInt32

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
    }

    /// The account a root host's workers use unless told otherwise.
    public static let defaultUser = "nobody"
    /// What `nobody` is where the password database does not say.
    static let overflowID: UInt32 = 65534

    /// `UID:GID`, as the worker's `--sandbox` plan carries it.
    var encoded: String { "\(uid):\(gid)" }

    init?(encoded: String) {
        let parts = encoded.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let uid = UInt32(parts[0]), let gid = UInt32(parts[1]) else { return nil }
        self.init(uid: uid, gid: gid)
    }

    /// The identity for `--worker-user VALUE`: a user name (with that
    /// user's primary group), `UID` or `UID:GID`. Root is refused: it would
    /// undo the point.
    public static func parse(_ value: String) throws(SandboxError) -> WorkerIdentity {
        let identity: WorkerIdentity
        if let numeric = WorkerIdentity(encoded: value) {
            identity = numeric
        } else if let uid = UInt32(value) {
            identity = WorkerIdentity(uid: uid, gid: uid)
        } else if let entry = getpwnam(value) {
            identity = WorkerIdentity(uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
        } else if value == defaultUser {
            identity = WorkerIdentity(uid: overflowID, gid: overflowID)
        } else {
            throw SandboxError("--worker-user \(value): no such user (give a user name, UID or UID:GID)")
        }
        guard identity.uid != 0, identity.gid != 0 else {
            throw SandboxError("--worker-user \(value): workers never run as root or in group 0; name an unprivileged user such as \(defaultUser)")
        }
        return identity
    }

    /// The identity this host's workers take: nil unless the host runs as
    /// root; then `option` (`--worker-user`), or `nobody`.
    public static func forHost(option: String?) throws(SandboxError) -> WorkerIdentity? {
        guard geteuid() == 0 else {
            if let option { throw SandboxError("--worker-user \(option): only a host run as root changes its workers' user") }
            return nil
        }
        return try parse(option ?? defaultUser)
    }
}
