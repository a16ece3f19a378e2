import CSandbox

/// Which of the sandbox's kernel mechanisms this machine offers.
public struct KernelSupport: Sendable, Equatable {
    /// The Landlock ABI version, or nil when Landlock is missing or disabled.
    public var landlockABI: Int?
    /// Whether seccomp filters can be loaded.
    public var seccomp: Bool
    /// The namespaces a worker of this user can be given (empty: none, or
    /// not asked: `probe(namespaces: false)`).
    public var namespaces: Namespaces = []

    public init(landlockABI: Int?, seccomp: Bool, namespaces: Namespaces = []) {
        self.landlockABI = landlockABI
        self.seccomp = seccomp
        self.namespaces = namespaces
    }

    /// Asks the running kernel. `namespaces` also tries them, in a child
    /// forked for it (the host does, once; a worker just enters them).
    public static func probe(namespaces: Bool = false) -> KernelSupport {
        let abi = xcallback_landlock_abi()
        return KernelSupport(landlockABI: abi > 0 ? Int(abi) : nil, seccomp: xcallback_seccomp_available() == 1,
                             namespaces: namespaces ? Namespaces(rawValue: xcallback_namespaces_available()) : [])
    }

    /// What is missing, in words, or nil when every layer is available.
    /// Namespaces (and the file view built in one) are not counted: they
    /// back up Landlock and seccomp, which confine a worker without them;
    /// `layers(for:)` names what a worker goes without.
    public var missing: String? {
        var parts: [String] = []
        if landlockABI == nil { parts.append("Landlock (file, network and signal confinement)") }
        if !seccomp { parts.append("seccomp (system-call filtering)") }
        return parts.isEmpty ? nil : parts.joined(separator: " and ")
    }

    /// The one-line warning `--sandbox auto` gives on a kernel without a layer.
    public var warning: String? {
        missing.map {
            "this kernel lacks \($0): workers run with the layers it has (capabilities dropped, no-new-privs, rlimits) and without that one; --sandbox strict refuses to start instead"
        }
    }

    /// Whether a worker gets a file view of its own (a mount namespace
    /// with an empty root, `xcallback_build_view`): the host's child could
    /// build one here.
    public var fileView: Bool { namespaces.contains(.mount) }

    /// The kernel's layers a worker with `capabilities` gets here, for
    /// `check`, `plugins` and the host's log: `landlock 7, seccomp, file
    /// view, ipc namespace, network namespace` (the process-wide ones,
    /// no-new-privs and rlimits, every worker gets).
    public func layers(for capabilities: Capabilities) -> [String] {
        var layers: [String] = []
        if let landlockABI { layers.append("landlock \(landlockABI)") }
        if seccomp { layers.append("seccomp") }
        if fileView { layers.append("file view") }
        let wanted = Namespaces.wanted(by: capabilities)
        if !wanted.isEmpty {
            if namespaces.isSuperset(of: wanted) {
                layers += wanted.names.map { "\($0) namespace" }
            } else {
                layers.append("no namespaces (the kernel lends none to this user)")
            }
        }
        if !fileView {
            layers.append("no file view (stat and inotify see the host's paths; modes, times and xattrs refused)")
        }
        return layers
    }
}

/// Namespaces of its own a worker is given (`xcallback_enter_namespaces`).
public struct Namespaces: OptionSet, Sendable, Hashable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The one an unprivileged user needs to own the others.
    public static let user = Namespaces(rawValue: Int32(XCALLBACK_NAMESPACE_USER))
    /// System V IPC objects of its own: none of the host's.
    public static let ipc = Namespaces(rawValue: Int32(XCALLBACK_NAMESPACE_IPC))
    /// A network of its own, with nothing in it (not even loopback up).
    public static let network = Namespaces(rawValue: Int32(XCALLBACK_NAMESPACE_NETWORK))
    /// Mounts of its own: the means of its file view.
    public static let mount = Namespaces(rawValue: Int32(XCALLBACK_NAMESPACE_MOUNT))

    /// What a worker with `capabilities` is given where the kernel lends
    /// it: the host's IPC and network namespaces only with `ipc` and
    /// `network` (the user namespace is a means, not counted here).
    public static func wanted(by capabilities: Capabilities) -> Namespaces {
        var wanted: Namespaces = []
        if !capabilities.ipc { wanted.insert(.ipc) }
        if !capabilities.network { wanted.insert(.network) }
        return wanted
    }

    var names: [String] {
        [(Namespaces.ipc, "ipc"), (.network, "network"), (.mount, "mount"), (.user, "user")].filter { contains($0.0) }.map(\.1)
    }
}
