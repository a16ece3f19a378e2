import CSandbox

/// Which of the sandbox's kernel mechanisms this machine offers.
public struct KernelSupport: Sendable, Equatable {
    /// The Landlock ABI version, or nil when Landlock is missing or disabled.
    public var landlockABI: Int?
    /// Whether seccomp filters can be loaded.
    public var seccomp: Bool

    /// Asks the running kernel.
    public static func probe() -> KernelSupport {
        let abi = xcallback_landlock_abi()
        return KernelSupport(landlockABI: abi > 0 ? Int(abi) : nil, seccomp: xcallback_seccomp_available() == 1)
    }

    /// What is missing, in words, or nil when every layer is available.
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
}
