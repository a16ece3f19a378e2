import Testing
@testable import XCallbackMetrics

@Suite struct HostMetricsTests {
    let build = BuildInfo(version: "1.2.3", abi: "1.0", sandbox: "landlock,seccomp", isolation: "process")

    @Test func outcomesCountPerPluginAndCode() {
        let metrics = HostMetrics(build: build)
        let calc = metrics.plugin(named: "calc")
        calc.ended(.success, code: 0, nanoseconds: 1_000_000)
        calc.ended(.error, code: ErrorCodeLabel.index(of: "Timeout"), nanoseconds: 2_000_000_000)
        calc.ended(.error, code: ErrorCodeLabel.index(of: "MadeUpByThePlugin"), nanoseconds: 0)
        calc.ended(.success, code: 0, nanoseconds: nil)
        let samples = ScrapedSamples.parse(metrics.exposition(.prometheus))
        func value(_ name: String, _ labels: [String: String]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
        #expect(value("xcallback_requests_total", ["plugin": "calc", "outcome": "success"]) == 2,
                "counted whether its latency was sampled or not")
        #expect(value("xcallback_requests_total", ["plugin": "calc", "outcome": "error", "code": "Timeout"]) == 1)
        #expect(value("xcallback_requests_total", ["plugin": "calc", "outcome": "error", "code": "other"]) == 1)
        #expect(value("xcallback_request_duration_seconds_bucket", ["plugin": "calc", "le": "0.0001"]) == 1)
        #expect(value("xcallback_request_duration_seconds_bucket", ["plugin": "calc", "le": "0.00108"]) == 2)
        #expect(value("xcallback_request_duration_seconds_bucket", ["plugin": "calc", "le": "2.5"]) == 3)
        #expect(value("xcallback_request_duration_seconds_count", ["plugin": "calc"]) == 3, "the sampled ones")
        #expect(value("xcallback_build_info", ["version": "1.2.3", "abi": "1.0", "sandbox": "landlock,seccomp",
                                               "isolation": "process"]) == 1)
    }

    @Test func unknownPluginNamesGetNoLabelOfTheirOwn() {
        let metrics = HostMetrics(build: build)
        _ = metrics.plugin(named: "calc")
        #expect(metrics.counts(of: "calc").name == "calc")
        #expect(metrics.counts(of: "not-loaded").name == "(other)")
        #expect(metrics.counts(of: nil).name == "(host)")
        #expect(metrics.plugin(named: "(host)").name == "(other)")
        metrics.counts(of: "calc").ended(.success, code: 0, nanoseconds: 0)
        metrics.counts(of: "not-loaded").ended(.cancel, code: 0, nanoseconds: 0)
        metrics.counts(of: nil).ended(.error, code: ErrorCodeLabel.invalidURL, nanoseconds: 0)
        #expect(metrics.counts(of: "calc").outcomeCount(.success) == 1)
        #expect(metrics.other.outcomeCount(.cancel) == 1)
        #expect(metrics.host.outcomeCount(.error, code: ErrorCodeLabel.invalidURL) == 1)
    }

    @Test func pluginLabelsAreBounded() {
        let metrics = HostMetrics(build: build)
        for index in 0..<(HostMetrics.maxPlugins + 10) { _ = metrics.plugin(named: "p\(index)") }
        #expect(metrics.plugin(named: "one-too-many").name == "(other)")
        #expect(metrics.plugins.count == HostMetrics.maxPlugins + 2)
    }

    @Test func violationLabelsAreBoundedSyscallNames() {
        let metrics = HostMetrics(build: build)
        let plugin = metrics.plugin(named: "p")
        plugin.violation(call: "ptrace")
        plugin.violation(call: "ptrace")
        plugin.violation(call: "system call 999\"}")
        plugin.violation(call: nil)
        for index in 0..<100 { plugin.violation(call: "call_\(index)") }
        let calls = plugin.violationCounts
        #expect(calls.count == PluginMetrics.maxViolationNames)
        #expect(calls.first { $0.call == "ptrace" }?.count == 2)
        #expect(calls.contains { $0.call == "other" })
        #expect(calls.contains { $0.call == "unknown" })
        #expect(calls.reduce(0) { $0 + $1.count } == 104)
    }

    @Test func labelValuesAreEscaped() {
        let metrics = HostMetrics(build: build)
        metrics.plugin(named: "a\"b\\c\nd").ended(.success, code: 0, nanoseconds: 0)
        let text = metrics.exposition(.prometheus)
        #expect(text.contains(#"plugin="a\"b\\c\nd""#))
        let sample = ScrapedSamples.parse(text).first { $0.name == "xcallback_requests_total" }
        #expect(sample?.labels["plugin"] == "a\"b\\c\nd")
    }

    @Test func openMetricsNamesFamiliesWithoutTotalAndEnds() {
        let metrics = HostMetrics(build: build)
        let text = metrics.exposition(.openMetrics)
        #expect(text.hasSuffix("# EOF\n"))
        #expect(text.contains("# TYPE xcallback_requests counter\n"))
        #expect(text.contains("# TYPE xcallback_build info\n"))
        let plain = metrics.exposition(.prometheus)
        #expect(plain.contains("# TYPE xcallback_requests_total counter\n"))
        #expect(!plain.contains("# EOF"))
        #expect(ExpositionFormat.negotiated(accept: "application/openmetrics-text;version=1.0.0,text/plain;q=0.5") == .openMetrics)
        #expect(ExpositionFormat.negotiated(accept: "text/plain") == .prometheus)
        #expect(ExpositionFormat.negotiated(accept: nil) == .prometheus)
    }

    @Test func inFlightIsLinesLessRecords() {
        let metrics = HostMetrics(build: build)
        let stream = StreamCounts()
        metrics.input(.stdin).open(stream)
        stream.lines.add(5)
        stream.records.add(3)
        #expect(metrics.inFlight == 2)
    }

    @Test func aClosedStreamKeepsCounting() {
        let metrics = HostMetrics(build: build)
        let input = metrics.input(.socket)
        let (first, second) = (StreamCounts(), StreamCounts())
        input.open(first)
        input.open(second)
        first.lines.add(4)
        first.records.add(4)
        second.lines.add(2)
        second.records.add(1)
        #expect(input.lines == 6 && input.records == 5)
        input.close(first)
        first.lines.add(100)
        #expect(input.lines == 6 && input.records == 5, "counted as it was when it closed")
        input.close(second)
        #expect(input.lines == 6 && input.records == 5)
        #expect(metrics.inFlight == 1)
    }
}

@Suite struct LatencyHistogramTests {
    @Test func boundsAreFineFrom10MicrosecondsTo1Second() {
        let bounds = LatencyHistogram.bounds
        #expect(LatencyHistogram.bucketCount == bounds.count + 1, "the buckets end with +Inf")
        #expect(bounds.count == LatencyHistogram.boundLabels.count)
        #expect(bounds.first == 1_000)
        #expect(bounds.last == 30_000_000_000)
        #expect(bounds == bounds.sorted() && Set(bounds).count == bounds.count)
        // Interpolated within a bucket, a quantile is off by at most the
        // bucket's width: under 10 % wherever handlers take their time.
        for (lower, upper) in zip(bounds, bounds.dropFirst()) where lower >= 10_000 && upper <= 1_000_000_000 {
            #expect(Double(upper) / Double(lower) < 1.085, "\(lower) ns to \(upper) ns")
        }
        // Every bound of the coarse buckets before is one still.
        for old: UInt64 in [100_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000,
                            100_000_000, 250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000, 5_000_000_000,
                            10_000_000_000, 30_000_000_000] {
            #expect(bounds.contains(old), "\(old)")
        }
        #expect(bounds.count < 160, "a scrape carries every bucket of every plug-in")
    }

    @Test func bucketsAreUpperBoundsInclusive() {
        let histogram = LatencyHistogram()
        for nanoseconds: UInt64 in [0, 1_000, 1_001, 100_000, 100_001, 30_000_000_000, 30_000_000_001] {
            histogram.observe(nanoseconds: nanoseconds)
        }
        let (cumulative, sum) = histogram.snapshot
        let index100us = LatencyHistogram.bounds.firstIndex(of: 100_000)!
        #expect(cumulative.first == 2)
        #expect(cumulative[1] == 3)
        #expect(cumulative[index100us] == 4)
        #expect(cumulative[index100us + 1] == 5)
        #expect(cumulative[LatencyHistogram.bounds.count - 1] == 6)
        #expect(cumulative.last == 7)
        #expect(histogram.count == 7)
        #expect(abs(sum - 60.000202003) < 1e-6)
    }

    @Test func labelsSayTheBoundsInSeconds() {
        for (bound, label) in zip(LatencyHistogram.bounds, LatencyHistogram.boundLabels) {
            #expect(Double(label).map { ($0 * 1e9).rounded() } == Double(bound), "\(label)")
            #expect(!label.contains("e") && (!label.contains(".") || !label.hasSuffix("0")), "\(label)")
        }
        #expect(LatencyHistogram.boundLabels.contains("0.0001") && LatencyHistogram.boundLabels.contains("1"))
        #expect(LatencyHistogram.secondsLabel(10_800) == "0.0000108")
        #expect(LatencyHistogram.secondsLabel(30_000_000_000) == "30")
    }
}

@Suite struct QueueMetricsCountTests {
    let build = BuildInfo(version: "1.2.3", abi: "1.0", sandbox: "off", isolation: "none")

    @Test func writtenOnlyByAHostThatConsumesAQueue() {
        let metrics = HostMetrics(build: build)
        metrics.queue.claimed.add(3)
        #expect(!metrics.exposition(.prometheus).contains("xcallback_queue_"))
        metrics.queue.startConsuming()
        let text = metrics.exposition(.prometheus)
        #expect(text.contains("# TYPE xcallback_queue_claimed_total counter\nxcallback_queue_claimed_total 3\n"))
        #expect(!text.contains("xcallback_queue_oldest_ready_age_seconds"), "no gauge before its first reading")
        let open = metrics.exposition(.openMetrics)
        #expect(open.contains("# TYPE xcallback_queue_claimed counter\nxcallback_queue_claimed_total 3\n"))
    }

    @Test func everyCounterAndTheGauge() {
        let metrics = HostMetrics(build: build)
        let queue = metrics.queue
        queue.startConsuming()
        queue.claimed.add(5)
        queue.reruns.add(2)
        queue.recorded.add(4)
        queue.fenced.add(1)
        queue.rescued.add(6)
        queue.dead.add(1)
        queue.leaseRenewals.add(7)
        queue.leasesLost.add(1)
        queue.databaseError(.connect)
        queue.databaseError(.record)
        queue.databaseError(.record)
        queue.oldestReady(seconds: 12.5)
        let samples = ScrapedSamples.parse(metrics.exposition(.prometheus))
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
        #expect(value("xcallback_queue_claimed_total") == 5)
        #expect(value("xcallback_queue_reruns_total") == 2)
        #expect(value("xcallback_queue_recorded_total") == 4)
        #expect(value("xcallback_queue_fenced_total") == 1)
        #expect(value("xcallback_queue_rescued_total") == 6)
        #expect(value("xcallback_queue_dead_total") == 1)
        #expect(value("xcallback_queue_lease_renewals_total") == 7)
        #expect(value("xcallback_queue_leases_lost_total") == 1)
        #expect(value("xcallback_queue_database_errors_total", ["kind": "connect"]) == 1)
        #expect(value("xcallback_queue_database_errors_total", ["kind": "record"]) == 2)
        #expect(value("xcallback_queue_database_errors_total", ["kind": "heartbeat"]) == 0)
        #expect(value("xcallback_queue_oldest_ready_age_seconds") == 12.5)
        // The kind label's values are the fixed list, every one written.
        let kinds = samples.filter { $0.name == "xcallback_queue_database_errors_total" }.compactMap { $0.labels["kind"] }
        #expect(kinds == QueueDatabaseErrorKind.allCases.map(\.label))
        queue.oldestReady(seconds: 0)
        #expect(ScrapedSamples.parse(metrics.exposition(.prometheus))
            .first { $0.name == "xcallback_queue_oldest_ready_age_seconds" }?.value == 0)
    }
}
