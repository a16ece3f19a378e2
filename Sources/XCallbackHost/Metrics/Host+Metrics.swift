import XCallbackBridge
import XCallbackMetrics

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Host {
    /// The counts of a host configured with `collectsMetrics`, labelled
    /// with what it was built as and the sandbox layers its workers enter.
    static func makeMetrics(configuration: HostConfiguration, layers: [String]) -> HostMetrics {
        let build = BuildInfo(version: configuration.version, abi: ABILayout.version,
                              sandbox: layers.isEmpty ? "off" : layers.joined(separator: ","),
                              isolation: configuration.isolation.rawValue)
        return HostMetrics(build: build, startTimeSeconds: UInt64(max(time(nil), 0)))
    }
}

extension WorkerEndCause {
    /// The `cause` label of a worker's death.
    init(_ death: WorkerDeath) {
        switch death {
        case .crashed, .brokeProtocol: self = .crash
        case .sandboxViolation: self = .sandbox
        case .memoryLimit: self = .memory
        }
    }
}
