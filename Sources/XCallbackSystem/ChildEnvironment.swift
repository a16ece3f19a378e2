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
public enum ChildEnvironment {
    /// Runs `body` with a NULL-terminated `envp` array: the host's
    /// environment, or with `sandbox` only what it lets the worker see.
    public static func withEnvironment<R>(for sandbox: SandboxPlan? = nil,
                                   _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        withEnvironment(passing: { name in sandbox.map { SandboxEnvironment.passes(name, for: $0.capabilities) } ?? true }, body)
    }

    /// The same, with the variables `passes` lets through.
    public static func withEnvironment<R>(passing passes: (Substring) -> Bool,
                                   _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let environment: [UnsafeMutablePointer<CChar>?] = variables(passing: passes).map { strdup($0) } + [nil]
        defer { environment.forEach { free($0) } }
        return body(environment)
    }

    /// The variables a child with `sandbox` gets, as `NAME=value` lines.
    public static func variables(for sandbox: SandboxPlan?) -> [String] {
        variables(passing: { name in sandbox.map { SandboxEnvironment.passes(name, for: $0.capabilities) } ?? true })
    }

    private static func variables(passing passes: (Substring) -> Bool) -> [String] {
        var variables: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            let name = text.prefix { $0 != "=" }
            if name != "SWIFT_BACKTRACE", passes(name) { variables.append(text) }
            pointer += 1
        }
        variables.append("SWIFT_BACKTRACE=enable=no")
        return variables
    }
}
