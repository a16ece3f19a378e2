import XCallbackBridge
import XCallbackSandbox
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's side of the worker sandbox: reads what each plug-in declares
/// (`NAME.caps.toml` beside its file, checked like the file itself), narrows
/// it by the operator's grants, and plans the sandbox its workers enter.
public final class WorkerSandboxing: Sendable {
    public let mode: SandboxMode
    public let policy: SandboxPolicy
    public let kernel: KernelSupport
    private let scratch = ScratchFolders()

    /// A declaration is a few lines; anything bigger is a mistake.
    static let maxDeclarationBytes = 64 * 1024

    /// Who a root host's workers run as (nil: the host's own uid, not root).
    public let identity: WorkerIdentity?

    public init(mode: SandboxMode, policy: SandboxPolicy = SandboxPolicy(),
                kernel: KernelSupport = .probe(namespaces: true), identity: WorkerIdentity? = nil) {
        self.mode = mode
        self.policy = policy
        self.kernel = kernel
        self.identity = identity
    }

    /// What the plug-in at `path` declares, or nil when it has no sidecar.
    public static func declared(forPluginAt path: String, security: FileSecurity) throws(PluginLoadError) -> Capabilities? {
        let sidecar = CapabilityDeclaration.sidecarPath(for: path)
        var info = stat()
        guard lstat(sidecar, &info) == 0 else { return nil }
        let file = try PluginFile.open(sidecar, security: security)
        defer { file.close() }
        let text = try file.readText(limit: maxDeclarationBytes) { .badCapabilities($0) }
        do {
            return try CapabilityDeclaration.parse(text, file: sidecar)
        } catch {
            throw PluginLoadError(path: path, reason: .badCapabilities(error.description))
        }
    }

    /// What the plug-in at `path` may do: its declaration (or the defaults)
    /// narrowed by the operator's grants.
    public func effective(forPluginAt path: String, security: FileSecurity) throws(PluginLoadError) -> Capabilities {
        let declared = try Self.declared(forPluginAt: path, security: security) ?? .default
        return declared.narrowed(by: policy.ceiling(forPluginAt: path))
    }

    /// The plan a worker for `path` gets; nil with `--sandbox off`.
    func plan(forPluginAt path: String, security: FileSecurity) throws(PluginLoadError) -> SandboxPlan? {
        guard mode != .off else { return nil }
        let capabilities = try effective(forPluginAt: path, security: security)
        let folder = try scratch.folder(for: path, named: CapabilityDeclaration.baseName(of: path))
        return SandboxPlan(capabilities: capabilities, scratch: folder, pluginPath: path, strict: mode == .strict,
                           fileView: kernel.fileView, identity: identity)
    }

    /// One line for `check` and `plugins`: the sandbox the plug-in's
    /// workers get, or why they get none.
    public func describe(forPluginAt path: String, security: FileSecurity, isolation: Isolation) -> String {
        describing(forPluginAt: path, security: security, isolation: isolation).text
    }

    /// The sandbox the plug-in's workers get, as fields (`plugins --json`).
    public func describing(forPluginAt path: String, security: FileSecurity, isolation: Isolation) -> SandboxDescription {
        if isolation == .none { return SandboxDescription(mode: .none) }
        let shown: SandboxDescription.Mode = switch mode {
        case .auto: .auto
        case .strict: .strict
        case .off: .off
        }
        var description = SandboxDescription(mode: shown)
        guard mode != .off else { return description }
        do {
            let capabilities = try effective(forPluginAt: path, security: security)
            description.grants = capabilities
            description.layers = kernel.layers(for: capabilities)
            description.missing = kernel.missing
            description.fileView = kernel.fileView
            description.uid = identity?.uid
            if kernel.seccomp { description.groups = SystemCallPolicy.groups(for: capabilities, fileView: kernel.fileView) }
        } catch {
            description.refused = error.reasonText
        }
        return description
    }

    /// Counts a worker or probe about to start with a scratch folder until
    /// it is seen to end (`ScratchWriter.ended`); nil once the folders are
    /// removed, when nothing may start.
    func admitScratchWriter() -> ScratchWriter? { scratch.admitWriter() }

    /// Removes the plug-ins' scratch folders once every worker and probe
    /// that could write there is seen to end: up to `deadline` by
    /// themselves, then killed (`ScratchFolders.removeAll`). The result says
    /// what was left and why, for the log.
    @discardableResult
    public func removeScratchFolders(waitingUntil deadline: UInt64 = MonotonicClock.now + 2_000_000_000) -> ScratchFolders.Removal {
        scratch.removeAll(waitingUntil: deadline)
    }
}
