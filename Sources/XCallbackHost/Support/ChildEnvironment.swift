import XCallbackSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The environment for the host's own child processes (workers, probes).
/// Swift's crash backtracer is turned off there: it would catch a plug-in's
/// SIGSEGV, print a report and, for a raised signal, let the process go on
/// as if nothing happened, so a crash must reach the host as a crash.
enum ChildEnvironment {
    /// Runs `body` with a NULL-terminated `envp` array: the host's
    /// environment, or with `sandbox` only what it lets the worker see.
    static func withEnvironment<R>(for sandbox: SandboxPlan? = nil,
                                   _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var environment: [UnsafeMutablePointer<CChar>?] = []
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            let name = text.prefix { $0 != "=" }
            if name != "SWIFT_BACKTRACE", sandbox.map({ SandboxEnvironment.passes(name, for: $0.capabilities) }) ?? true {
                environment.append(strdup(entry))
            }
            pointer += 1
        }
        environment.append(strdup("SWIFT_BACKTRACE=enable=no"))
        environment.append(nil)
        defer { environment.forEach { free($0) } }
        return body(environment)
    }
}
