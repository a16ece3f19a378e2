import XCallbackBridge
import XCallbackHost
import XCallbackSandbox

extension WorkerSandboxing {
    /// The sandbox a worker for `path` gets, as fields a script can read
    /// (`check --json`): the mode, the kernel's layers, the system-call
    /// groups of the allow-list, the effective grants, what this kernel
    /// lacks, and the uid a root host's workers take. The prose is the text
    /// form's (`describe`).
    func fields(forPluginAt path: String, security: FileSecurity) -> JSONText.Value {
        guard mode != .off else {
            return .object([("mode", .string(mode.rawValue)), ("layers", .strings([])), ("groups", .strings([]))])
        }
        let capabilities: Capabilities
        do {
            capabilities = try effective(forPluginAt: path, security: security)
        } catch {
            return .object([("mode", .string(mode.rawValue)), ("refused", .string(error.reasonText))])
        }
        let groups = kernel.seccomp ? SystemCallPolicy.groups(for: capabilities, fileView: kernel.fileView) : []
        return .object([
            ("mode", .string(mode.rawValue)),
            ("layers", .strings(kernel.layers(for: capabilities))),
            ("groups", .strings(groups)),
            ("fileView", .bool(kernel.fileView)),
            ("uid", identity.map { .number(Int($0.uid)) } ?? .null),
            ("missing", kernel.missing.map { .string($0) } ?? .null),
            ("grants", .object([
                ("network", .bool(capabilities.network)),
                ("exec", .bool(capabilities.exec)),
                ("ipc", .bool(capabilities.ipc)),
                ("processes", .number(capabilities.processes)),
                ("memory", .number(capabilities.memoryMiB)),
                ("openFiles", .number(capabilities.openFiles)),
                ("scratch", .number(capabilities.scratchMiB)),
                ("read", .strings(capabilities.filesRead)),
                ("write", .strings(capabilities.filesWrite)),
                ("environment", .strings(capabilities.environment)),
            ])),
        ])
    }
}
