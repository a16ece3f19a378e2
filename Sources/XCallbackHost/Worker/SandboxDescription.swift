import XCallbackSandbox

/// The sandbox a plug-in's workers get, as fields (`plugins --json`), and
/// as the one line `check` and `plugins` print (`text`).
public struct SandboxDescription: Sendable {
    /// What decided it.
    public enum Mode: String, Sendable {
        /// `--sandbox auto` and `strict`: the layers below.
        case auto, strict
        /// `--sandbox off`: none, by the operator's choice.
        case off
        /// `--isolation none`: plug-ins run inside the host, with no worker.
        case none
    }

    public var mode: Mode
    /// The kernel's layers the workers get here (`KernelSupport.layers`);
    /// empty when there is no sandbox.
    public var layers: [String] = []
    /// The seccomp allow-list's named groups of system calls the workers
    /// get (`SystemCallPolicy`); empty without seccomp.
    public var groups: [String] = []
    /// Whether the workers get a file view of their own.
    public var fileView = false
    /// The uid a root host's workers take; nil: the host's own.
    public var uid: UInt32?
    /// The effective capabilities (declared, narrowed by the operator's
    /// grants); nil when there is no sandbox or the declaration is refused.
    public var grants: Capabilities?
    /// The layers this kernel lacks, in words (`KernelSupport.missing`).
    public var missing: String?
    /// Why the plug-in's declaration was refused, when it was.
    public var refused: String?

    public init(mode: Mode) {
        self.mode = mode
    }

    /// The one line: what the workers may do, what the kernel lacks, the layers.
    public var text: String {
        if let refused { return "refused: \(refused)" }
        switch mode {
        case .none: return "none (--isolation none runs plug-ins inside the host)"
        case .off: return "off (--sandbox off)"
        case .auto, .strict: break
        }
        let missing = missing.map { "; without \($0)" } ?? ""
        let user = uid.map { "; uid \($0)" } ?? ""
        return (grants?.summary ?? "") + missing + "; layers: " + layers.joined(separator: ", ") + user
    }
}
