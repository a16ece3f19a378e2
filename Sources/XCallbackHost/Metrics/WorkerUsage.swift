import XCallbackMetrics

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A worker process's resident memory and CPU time, from `/proc/PID/stat`
/// (read at a scrape, never on the request path).
enum WorkerUsage {
    static func sample(plugin: String, pid: pid_t) -> WorkerSample? {
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return parse(Array(buffer[..<count]), plugin: plugin, ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))),
                     pageSize: UInt64(sysconf(Int32(_SC_PAGESIZE))))
    }

    /// The fields after the command name (which may hold spaces and `)`):
    /// utime and stime are the 14th and 15th of the line, rss the 24th.
    static func parse(_ stat: [UInt8], plugin: String, ticksPerSecond: Double, pageSize: UInt64) -> WorkerSample? {
        guard let close = stat.lastIndex(of: UInt8(ascii: ")")), ticksPerSecond > 0 else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
        guard fields.count > 21, let user = UInt64(fields[11]), let system = UInt64(fields[12]),
              let pages = UInt64(fields[21].trimmingNewline) else { return nil }
        return WorkerSample(plugin: plugin, residentBytes: pages * pageSize, cpuSeconds: Double(user + system) / ticksPerSecond)
    }
}

extension String {
    fileprivate var trimmingNewline: Substring { self[...].prefix { $0 != "\n" } }
}

extension Host {
    /// Lets a scrape count each plug-in's requests in flight.
    func countInFlightForMetrics() {
        // Weakly: the dispatcher holds the metrics that hold this closure.
        metrics?.countInFlight { [weak dispatcher] in dispatcher?.inFlight.countByPlugin() ?? [:] }
    }

    /// Lets a scrape read every worker's memory and CPU time.
    func sampleWorkersForMetrics() {
        metrics?.sampleWorkers { [registry] in
            registry.endpoints.compactMap { endpoint -> WorkerSample? in
                guard let worker = endpoint as? WorkerEndpoint, let pid = worker.currentWorkerPID else { return nil }
                return WorkerUsage.sample(plugin: worker.pluginName, pid: pid)
            }
        }
    }
}
