import CSandbox

/// The seccomp allow-list as Swift sees it: the named groups of system
/// calls a worker may make, kept in one table in C (`allow_list.c`), which
/// the filter is built from too. `check --json` lists the groups a
/// worker gets; docs/security.md describes them.
public enum SystemCallPolicy {
    /// One group of the allow-list.
    public struct Group: Sendable, Equatable {
        public let name: String
        public let purpose: String
        /// What widens a worker's set by this group: nil for every worker,
        /// else the capability (`network`, `exec`, `processes`, `ipc`) or
        /// `file view`.
        public let widenedBy: String?
        public let calls: [String]
    }

    /// Every group, in the table's order.
    public static let groups: [Group] = (0..<xcallback_seccomp_group_count()).map { index in
        var calls: [String] = []
        while let call = xcallback_seccomp_group_call(index, Int32(calls.count)) { calls.append(String(cString: call)) }
        let widenedBy: String? = switch Int(xcallback_seccomp_group_needs(index)) {
        case Int(XCALLBACK_GROUP_FILE_VIEW): "file view"
        case Int(XCALLBACK_GROUP_NETWORK): "network"
        case Int(XCALLBACK_GROUP_EXEC): "exec"
        case Int(XCALLBACK_GROUP_PROCESSES): "processes"
        case Int(XCALLBACK_GROUP_IPC): "ipc"
        default: nil
        }
        return Group(name: String(cString: xcallback_seccomp_group_name(index)),
                     purpose: String(cString: xcallback_seccomp_group_purpose(index)), widenedBy: widenedBy, calls: calls)
    }

    /// The filter's view of `capabilities` (the pids are the worker's to fill in).
    static func grant(for capabilities: Capabilities, fileView: Bool) -> xcallback_seccomp_grant {
        xcallback_seccomp_grant(network: capabilities.network ? 1 : 0, exec: capabilities.exec ? 1 : 0,
                                processes: capabilities.processes > 0 ? 1 : 0, ipc: capabilities.ipc ? 1 : 0,
                                own_pid: 0, host_pid: 0, file_view: fileView ? 1 : 0)
    }

    /// Compiles the allow-list a worker with `capabilities` loads, once, in
    /// a process that forks workers afterwards (the zygote): each forked
    /// worker then loads it as it is. Call only while single-threaded.
    public static func prepare(for capabilities: Capabilities, fileView: Bool) {
        var grant = grant(for: capabilities, fileView: fileView)
        _ = xcallback_allow_list_prepare(&grant)
    }

    /// The names of the groups a worker with `capabilities` gets.
    public static func groups(for capabilities: Capabilities, fileView: Bool) -> [String] {
        var grant = grant(for: capabilities, fileView: fileView)
        return groups.indices.filter { xcallback_seccomp_group_granted(Int32($0), &grant) != 0 }.map { groups[$0].name }
    }
}
