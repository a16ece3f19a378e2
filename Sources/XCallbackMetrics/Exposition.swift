/// The two text formats a scrape may ask for.
public enum ExpositionFormat: Sendable {
    /// Prometheus text format 0.0.4.
    case prometheus
    /// OpenMetrics 1.0.0, for a scrape whose `Accept` names it.
    case openMetrics

    public var contentType: String {
        switch self {
        case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
        case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
        }
    }

    /// The format an `Accept` header asks for: OpenMetrics only when named.
    public static func negotiated(accept: String?) -> ExpositionFormat {
        guard let accept, accept.contains("application/openmetrics-text") else { return .prometheus }
        return .openMetrics
    }
}

extension HostMetrics {
    /// Every metric, in `format`.
    public func exposition(_ format: ExpositionFormat) -> String {
        var out = Exposition(format: format)
        let build = self.build
        out.family("xcallback_build", type: .info, help: "What the host was built as and runs with.")
        out.sample("xcallback_build_info", [("version", build.version), ("abi", build.abi),
                                            ("sandbox", build.sandbox), ("isolation", build.isolation)], UInt64(1))
        out.family("xcallback_start_time_seconds", type: .gauge, help: "When the host started, in seconds since the Unix epoch.")
        out.sample("xcallback_start_time_seconds", [], startTimeSeconds)
        out.family("xcallback_requests_in_flight", type: .gauge, help: "Requests read and not yet answered, over every input.")
        out.sample("xcallback_requests_in_flight", [], inFlight)

        let plugins = self.plugins
        out.family("xcallback_requests", type: .counter, help: "Requests ended (one per record), by plug-in, outcome and error code.")
        for plugin in plugins {
            for outcome in [OutcomeClass.success, .cancel] {
                let value = plugin.outcomeCount(outcome)
                if value > 0 { out.sample("xcallback_requests_total", [("plugin", plugin.name), ("outcome", outcome.label)], value) }
            }
            for code in 0..<ErrorCodeLabel.count {
                let value = plugin.outcomeCount(.error, code: code)
                if value > 0 {
                    out.sample("xcallback_requests_total", [("plugin", plugin.name), ("outcome", "error"),
                                                            ("code", ErrorCodeLabel.label(at: code))], value)
                }
            }
        }
        out.family("xcallback_request_duration_seconds", type: .histogram,
                   help: "Time from reading a request to its outcome, by plug-in, of the requests timed on the fine clock (a sample).")
        for plugin in plugins {
            let (cumulative, sum) = plugin.latency.snapshot
            guard cumulative.last! > 0 else { continue }
            for (index, bound) in LatencyHistogram.boundLabels.enumerated() {
                out.sample("xcallback_request_duration_seconds_bucket", [("plugin", plugin.name), ("le", bound)], cumulative[index])
            }
            out.sample("xcallback_request_duration_seconds_bucket", [("plugin", plugin.name), ("le", "+Inf")], cumulative.last!)
            out.sample("xcallback_request_duration_seconds_sum", [("plugin", plugin.name)], seconds: sum)
            out.sample("xcallback_request_duration_seconds_count", [("plugin", plugin.name)], cumulative.last!)
        }

        let loaded = plugins.filter { $0 !== host && $0 !== other }
        let inFlight = inFlightByPlugin
        out.family("xcallback_plugin_requests_in_flight", type: .gauge,
                   help: "Requests handed to the plug-in and not yet answered, in process or in a worker.")
        for plugin in loaded { out.sample("xcallback_plugin_requests_in_flight", [("plugin", plugin.name)], inFlight[plugin.name] ?? 0) }
        if let others = inFlight[other.name] {
            out.sample("xcallback_plugin_requests_in_flight", [("plugin", other.name)], others)
        }
        out.family("xcallback_worker_starts", type: .counter, help: "Worker processes started, the first included.")
        for plugin in loaded { out.sample("xcallback_worker_starts_total", [("plugin", plugin.name)], plugin.workerStarts.current) }
        out.family("xcallback_worker_restarts", type: .counter, help: "Worker processes started again after one ended.")
        for plugin in loaded { out.sample("xcallback_worker_restarts_total", [("plugin", plugin.name)], plugin.workerRestarts.current) }
        out.family("xcallback_worker_crashes", type: .counter, help: "Workers that ended before their time, by cause.")
        for plugin in loaded {
            for cause in WorkerEndCause.allCases {
                let value = plugin.workerEndCount(cause)
                if value > 0 { out.sample("xcallback_worker_crashes_total", [("plugin", plugin.name), ("cause", cause.label)], value) }
            }
        }
        out.family("xcallback_quarantines", type: .counter, help: "Times a plug-in was quarantined after too many crashes.")
        for plugin in loaded { out.sample("xcallback_quarantines_total", [("plugin", plugin.name)], plugin.quarantines.current) }
        out.family("xcallback_plugin_quarantined", type: .gauge, help: "1 while the plug-in is quarantined.")
        for plugin in loaded { out.sample("xcallback_plugin_quarantined", [("plugin", plugin.name)], plugin.isQuarantined ? 1 : 0) }
        out.family("xcallback_plugin_sandboxed", type: .gauge, help: "1 when the plug-in runs in sandboxed worker processes.")
        for plugin in loaded { out.sample("xcallback_plugin_sandboxed", [("plugin", plugin.name)], plugin.isSandboxed ? 1 : 0) }
        let workers = workerSamples.filter { sample in loaded.contains { $0.name == sample.plugin } }
        out.family("xcallback_worker_resident_memory_bytes", type: .gauge, help: "Resident memory of the plug-in's current worker process.")
        for sample in workers { out.sample("xcallback_worker_resident_memory_bytes", [("plugin", sample.plugin)], sample.residentBytes) }
        out.family("xcallback_worker_cpu_seconds", type: .counter, help: "CPU time (user and system) of the plug-in's current worker process.")
        for sample in workers { out.sample("xcallback_worker_cpu_seconds_total", [("plugin", sample.plugin)], seconds: sample.cpuSeconds) }
        out.family("xcallback_sandbox_violations", type: .counter, help: "Workers ended by their sandbox, by system call.")
        for plugin in loaded {
            for (call, count) in plugin.violationCounts {
                out.sample("xcallback_sandbox_violations_total", [("plugin", plugin.name), ("call", call)], count)
            }
        }

        let inputs = allInputs
        func perInput(_ name: String, _ type: Exposition.MetricType, _ help: String, _ value: (InputMetrics) -> UInt64) {
            out.family(name, type: type, help: help)
            let sample = type == .counter ? name + "_total" : name
            for input in inputs { out.sample(sample, [("input", input.kind.label)], value(input)) }
        }
        perInput("xcallback_input_lines", .counter, "Request lines read and dispatched.") { $0.lines }
        perInput("xcallback_input_invalid_lines", .counter, "Lines answered InvalidURL.") { $0.invalidLines.current }
        perInput("xcallback_input_bytes", .counter, "Bytes read.") { $0.bytes.current }
        perInput("xcallback_input_connections", .counter, "Socket connections accepted and served.") { $0.connectionsOpened.current }
        perInput("xcallback_input_connections_open", .gauge, "Socket connections being served.") {
            let opened = $0.connectionsOpened.current, closed = $0.connectionsClosed.current
            return opened > closed ? opened - closed : 0
        }
        out.family("xcallback_input_connections_refused", type: .counter, help: "Socket connections turned away, by reason.")
        for input in inputs {
            for reason in RefusalReason.allCases {
                out.sample("xcallback_input_connections_refused_total", [("input", input.kind.label), ("reason", reason.label)],
                           input.refusedCount(reason))
            }
        }
        perInput("xcallback_output_records", .counter, "Records written (or handed to the queue).") { $0.records }
        out.family("xcallback_output_wait_seconds", type: .counter,
                   help: "Time an input's reading waited because its records were not being taken.")
        for input in inputs {
            out.sample("xcallback_output_wait_seconds_total", [("input", input.kind.label)],
                       seconds: Double(input.outputWaitNanoseconds.current) / 1e9)
        }
        if queue.isConsuming { queue.write(to: &out) }
        return out.finish()
    }
}

extension QueueMetrics {
    /// The `xcallback_queue_*` families.
    func write(to out: inout Exposition) {
        func counter(_ name: String, _ help: String, _ counter: Counter) {
            out.family(name, type: .counter, help: help)
            out.sample(name + "_total", [], counter.current)
        }
        counter("xcallback_queue_claimed", "Requests this host claimed from the queue and handed to its plug-ins.", claimed)
        counter("xcallback_queue_reruns", "Claimed requests that an earlier claim had already taken (attempt above 1).", reruns)
        counter("xcallback_queue_recorded", "Outcomes this host recorded in the queue.", recorded)
        counter("xcallback_queue_fenced", "Outcomes not recorded because this host's lease on them had run out.", fenced)
        counter("xcallback_queue_rescued", "Requests of hosts whose lease ran out, returned to the queue by this host.", rescued)
        counter("xcallback_queue_dead", "Requests this host retired dead (out of attempts).", dead)
        counter("xcallback_queue_lease_renewals", "Heartbeats that renewed this host's lease.", leaseRenewals)
        counter("xcallback_queue_leases_lost", "Times this host found its lease had run out and registered again.", leasesLost)
        out.family("xcallback_queue_database_errors", type: .counter, help: "Failed database work, by what failed.")
        for kind in QueueDatabaseErrorKind.allCases {
            out.sample("xcallback_queue_database_errors_total", [("kind", kind.label)], databaseErrorCount(kind))
        }
        if let age = oldestReadySeconds {
            out.family("xcallback_queue_oldest_ready_age_seconds", type: .gauge,
                       help: "Age of the oldest request waiting to be claimed (0: none waits), read at each heartbeat.")
            out.sample("xcallback_queue_oldest_ready_age_seconds", [], seconds: age)
        }
    }
}

/// Writes families and samples in one of the two formats.
struct Exposition {
    enum MetricType: String {
        case counter, gauge, histogram, info
    }

    let format: ExpositionFormat
    private var text = ""

    init(format: ExpositionFormat) {
        self.format = format
        text.reserveCapacity(16 * 1024)
    }

    /// `name` is the family's name as OpenMetrics has it (no `_total`).
    mutating func family(_ name: String, type: MetricType, help: String) {
        switch format {
        case .prometheus:
            // 0.0.4 has no info type; a counter's family is named as its samples.
            let sampleName = type == .counter ? name + "_total" : type == .info ? name + "_info" : name
            text += "# HELP \(sampleName) \(help)\n# TYPE \(sampleName) \(type == .info ? "gauge" : type.rawValue)\n"
        case .openMetrics:
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type.rawValue)\n"
        }
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: UInt64) {
        line(name, labels, String(value))
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], seconds value: Double) {
        line(name, labels, value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value))
    }

    private mutating func line(_ name: String, _ labels: [(String, String)], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (index, (label, labelValue)) in labels.enumerated() {
                if index > 0 { text += "," }
                text += label
                text += "=\""
                text += Self.escaped(labelValue)
                text += "\""
            }
            text += "}"
        }
        text += " "
        text += value
        text += "\n"
    }

    mutating func finish() -> String {
        if format == .openMetrics { text += "# EOF\n" }
        return text
    }

    /// A label value as both formats quote it.
    static func escaped(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return value }
        var out = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}
