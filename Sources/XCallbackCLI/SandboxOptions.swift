import ArgumentParser
import XCallbackHost
import XCallbackSandbox

/// The sandbox options `run`, `check` and `plugins` share: the two listings
/// show the sandbox `run` would give each plug-in.
struct SandboxOptions: ParsableArguments {
    @Option(name: .customLong("sandbox"), help: "The workers' sandbox: auto (every layer the kernel offers; one warning for any it lacks), strict (refuse to start without Landlock and seccomp) or off.")
    var mode: SandboxArgument = .auto

    @Option(name: .customLong("sandbox-config"), help: ArgumentHelp("The operator's capability grants per plug-in file (TOML; see docs/security.md).", valueName: "file"),
            completion: .file(extensions: ["toml"]))
    var config: String?

    @Option(name: .customLong("worker-user"), help: ArgumentHelp("The user a host run as root runs its workers as: a name, UID or UID:GID (default: nobody). Workers never run as root.", valueName: "user"))
    var workerUser: String?

    /// Who a root host's workers run as, or an exit saying why not.
    func identity() throws -> WorkerIdentity? {
        guard mode.value != .off else { return nil }
        do {
            return try WorkerIdentity.forHost(option: workerUser)
        } catch {
            throw Failure.exit(error.description)
        }
    }

    /// The operator's grants, or an exit naming the file and the problem.
    func policy() throws -> SandboxPolicy {
        guard let path = config else { return SandboxPolicy() }
        let bytes: [UInt8]?
        do {
            bytes = try TextFile.read(path)
        } catch {
            throw Failure.exit("--sandbox-config: \(error)")
        }
        guard let bytes else { throw Failure.exit("--sandbox-config: \(path): no such file") }
        do {
            return try SandboxPolicy(parsing: String(decoding: bytes, as: UTF8.self), file: path)
        } catch {
            throw Failure.exit("--sandbox-config: \(error.description)")
        }
    }

    /// The host side of the sandbox, as `run` would set it up.
    func sandboxing() throws -> WorkerSandboxing {
        WorkerSandboxing(mode: mode.value, policy: try policy(), identity: try identity())
    }
}

enum SandboxArgument: String, ExpressibleByArgument, CaseIterable {
    case auto, strict, off
    var value: SandboxMode { SandboxMode(rawValue: rawValue)! }
}
