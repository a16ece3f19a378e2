import XCallbackSandbox
import XCallbackSystem
import XCallbackURL
import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a worker died, as the requests it had begun are told: a crash, the
/// sandbox ending it for a forbidden system call, or its memory ceiling.
/// Each has its own error code, so a user can tell a plug-in's bug from a
/// plug-in reaching for something it was not given.
enum WorkerDeath: Equatable {
    case crashed(WorkerExit)
    /// The system call's name, or nil when its handler could not record it.
    case sandboxViolation(call: String?, WorkerExit)
    case memoryLimit(ceilingMiB: Int, WorkerExit)
    /// The host ended it for a frame no ready worker sends, or one that did
    /// not decode: its own `ready` after one its plug-in forged, say.
    case brokeProtocol(WorkerExit)

    /// What the worker's supervisor saw, the page the dead worker shared,
    /// and whether the host ended it for what it wrote (`brokeProtocol`).
    init(exit: WorkerExit, page: WorkerPageReport?, sandbox: SandboxPlan?, supervisor: SandboxSupervisor?,
         brokeProtocol: Bool = false) {
        if brokeProtocol {
            self = .brokeProtocol(exit)
        } else if let call = supervisor?.violation {
            self = .sandboxViolation(call: call, exit)
        } else if sandbox != nil, exit.signal == SIGSYS {
            self = .sandboxViolation(call: nil, exit)
        } else if let sandbox, page?.claimsMemoryCeiling == true,
                  Self.memoryAgrees(exit: exit, ceilingMiB: sandbox.capabilities.memoryMiB) {
            self = .memoryLimit(ceilingMiB: sandbox.capabilities.memoryMiB, exit)
        } else {
            self = .crashed(exit)
        }
    }

    /// The page's claim of a death at the memory ceiling is the worker's
    /// word; the kernel's count of its peak memory must agree (at least
    /// half the ceiling resident), or a plug-in could pass any crash off
    /// as `MemoryLimit`.
    static func memoryAgrees(exit: WorkerExit, ceilingMiB: Int) -> Bool {
        guard let peak = exit.peakResidentKiB else { return false }
        return peak >= ceilingMiB * 1024 / 2
    }

    /// What the worker did, completing "the worker of plug-in 'x' …".
    var description: String {
        switch self {
        case .crashed(let exit):
            return "\(exit)"
        case .sandboxViolation(let call, _):
            return "was ended by its sandbox for a forbidden system call (\(call ?? "not recorded"))"
        case .memoryLimit(let ceiling, let exit):
            return "reached its memory ceiling of \(ceiling) MiB and \(exit) (grant more with the 'memory' capability)"
        case .brokeProtocol:
            return "was ended for writing what no ready worker writes (its plug-in writes on the worker's socket)"
        }
    }

    /// The outcome of a request the worker had begun.
    func outcome(plugin: String) -> Outcome {
        let message = "the worker of plug-in '\(plugin)' \(description) while the request was in flight"
        switch self {
        case .crashed, .brokeProtocol: return HostError.crashed(message)
        case .sandboxViolation: return HostError.sandboxViolation(message)
        case .memoryLimit: return HostError.memoryLimit(message)
        }
    }
}
