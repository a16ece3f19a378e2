import Synchronization
import XCallbackSystem

/// What the host was built as and runs with: the `xcallback_build_info` labels.
public struct BuildInfo: Sendable, Equatable {
    public var version: String
    /// The plug-in ABI (`major.minor`).
    public var abi: String
    /// The workers' sandbox layers in force, comma-separated ("off" when none).
    public var sandbox: String
    public var isolation: String

    public init(version: String, abi: String, sandbox: String, isolation: String) {
        self.version = version
        self.abi = abi
        self.sandbox = sandbox
        self.isolation = isolation
    }
}

/// Every count a running host keeps for `run --metrics`: one instance per
/// host, handed to what learns of each event. Counting is atomic adds on
/// objects found once, when a plug-in is loaded (its endpoint and routes
/// keep its `PluginMetrics`); only registering a plug-in, a sandbox
/// violation and a scrape take a lock.
public final class HostMetrics: Sendable {
    public let build: BuildInfo
    private let inputs: [InputMetrics]
    /// Requests the host answered without a plug-in (a line that did not
    /// parse, no route, a stop): `plugin="(host)"`.
    public let host = PluginMetrics(name: "(host)")
    /// Plug-ins past `maxPlugins`, and names no loaded plug-in has.
    public let other = PluginMetrics(name: "(other)")
    /// The durable queue's events, for a host that consumes one.
    public let queue = QueueMetrics()
    /// The current table, read without a lock; every table ever published
    /// is kept in `tables`, so a reader's unretained one never goes away.
    private let current: Atomic<Unmanaged<PluginTable>>
    private let tables: Lock<[PluginTable]>
    private let started: UInt64
    /// Reads each plug-in's worker processes at a scrape (the host's).
    private let workerSampler = Lock<(@Sendable () -> [WorkerSample])?>(nil)
    /// Counts each plug-in's requests in flight at a scrape (the host's).
    private let inFlightCounter = Lock<(@Sendable () -> [String: Int])?>(nil)

    /// Plug-in names kept apart; past them, `(other)`.
    public static let maxPlugins = 256

    public init(build: BuildInfo, startTimeSeconds: UInt64 = 0) {
        self.build = build
        inputs = InputKind.allCases.map(InputMetrics.init(kind:))
        let empty = PluginTable(entries: [])
        tables = Lock([empty])
        current = Atomic(Unmanaged.passUnretained(empty))
        started = startTimeSeconds
    }

    public func input(_ kind: InputKind) -> InputMetrics { inputs[kind.rawValue] }

    /// How a scrape learns the workers' memory and CPU time: `sample` is
    /// called once per scrape, on the scraping thread.
    public func sampleWorkers(with sample: @escaping @Sendable () -> [WorkerSample]) {
        workerSampler.withLock { $0 = sample }
    }

    /// How a scrape learns each plug-in's requests in flight: `count` is
    /// called once per scrape and gives a count by plug-in name.
    public func countInFlight(with count: @escaping @Sendable () -> [String: Int]) {
        inFlightCounter.withLock { $0 = count }
    }

    /// Requests in flight by plug-in, each name as the other families
    /// label it (a name no loaded plug-in has counts as `(other)`).
    var inFlightByPlugin: [String: UInt64] {
        guard let count = inFlightCounter.withLock({ $0 }) else { return [:] }
        var labelled: [String: UInt64] = [:]
        for (name, value) in count() where value > 0 {
            labelled[lookUp(name)?.name ?? other.name, default: 0] += UInt64(value)
        }
        return labelled
    }

    var workerSamples: [WorkerSample] {
        let sample = workerSampler.withLock { $0 }
        return sample?() ?? []
    }

    /// The counts of plug-in `name`, made when it is first loaded (a
    /// reloaded plug-in keeps counting where it was).
    public func plugin(named name: String) -> PluginMetrics {
        if let found = lookUp(name) { return found }
        return tables.withLock { tables -> PluginMetrics in
            let table = tables.last!
            if let found = table.find(name) { return found }
            guard table.entries.count < Self.maxPlugins, name != host.name, name != other.name else { return other }
            let metrics = PluginMetrics(name: name)
            let next = PluginTable(entries: table.entries + [metrics])
            tables.append(next)
            current.store(Unmanaged.passUnretained(next), ordering: .releasing)
            return metrics
        }
    }

    /// The counts of a loaded plug-in, or `(other)`: a name that was never
    /// registered gets no label of its own (nil: the host's).
    public func counts(of plugin: String?) -> PluginMetrics {
        guard let plugin else { return host }
        return lookUp(plugin) ?? other
    }

    func lookUp(_ name: String) -> PluginMetrics? {
        current.load(ordering: .acquiring)._withUnsafeGuaranteedRef { table in
            table.index(of: name).map { table.entries[$0] }
        }
    }

    /// Every plug-in counted so far, in the order they were first loaded.
    var plugins: [PluginMetrics] {
        current.load(ordering: .acquiring)._withUnsafeGuaranteedRef { $0.entries } + [host, other]
    }

    var allInputs: [InputMetrics] { inputs }
    var startTimeSeconds: UInt64 { started }

    /// Requests read and not yet answered, over every input.
    var inFlight: UInt64 {
        let lines = inputs.reduce(UInt64(0)) { $0 &+ $1.lines }
        let records = inputs.reduce(UInt64(0)) { $0 &+ $1.records }
        return lines > records ? lines - records : 0
    }
}

/// The plug-ins known when it was made; never changed, replaced whole.
final class PluginTable: Sendable {
    let entries: [PluginMetrics]
    let names: [String]

    init(entries: [PluginMetrics]) {
        self.entries = entries
        names = entries.map(\.name)
    }

    func find(_ name: String) -> PluginMetrics? { index(of: name).map { entries[$0] } }

    func index(of name: String) -> Int? {
        names.withUnsafeBufferPointer { names in
            for index in names.indices where names[index] == name { return index }
            return nil
        }
    }
}

/// One plug-in's current worker process as the kernel counts it.
public struct WorkerSample: Sendable, Equatable {
    public var plugin: String
    public var residentBytes: UInt64
    /// User and system time of the worker process (it restarts from 0 with
    /// each new worker, which `rate()` takes as a counter reset).
    public var cpuSeconds: Double

    public init(plugin: String, residentBytes: UInt64, cpuSeconds: Double) {
        self.plugin = plugin
        self.residentBytes = residentBytes
        self.cpuSeconds = cpuSeconds
    }
}
