import XCallbackMetrics
import XCallbackSystem
import XCallbackURL

// Where `run --metrics` learns how each request ended: `Dispatcher.end`,
// the one place every request ends, calls `countEnded` just before the
// record is written (a chain's hops are not counted; its last outcome is).
// The plug-in's counts travel with the request from its route (found once,
// when the plug-in was loaded), so ending one looks nothing up.

extension Dispatcher {
    /// Counts a request that ends in a record: by plug-in, outcome and
    /// code, its latency if it was sampled (`LatencySampler`), and its
    /// input's invalid lines (its records are the sink's own count,
    /// `StreamCounts`). One relaxed atomic add for a success or cancel not
    /// sampled; nothing at all when metrics are off.
    @inline(__always)
    func countEnded(_ answer: Ending, of request: some EndingRequest, to sink: OutputSink) {
        unretainedMetrics?._withUnsafeGuaranteedRef { countEnded(answer, of: request, to: sink, in: $0) }
    }

    private func countEnded(_ answer: Ending, of request: some EndingRequest, to sink: OutputSink, in metrics: HostMetrics) {
        let started = request.fineStarted
        var nanoseconds: UInt64?
        if started != 0 {
            let now = MonotonicClock.now
            let took = now > started ? now - started : 0
            request.timed(took, by: self)
            nanoseconds = took
        }
        (request.endedBy ?? Unmanaged.passUnretained(metrics.host))._withUnsafeGuaranteedRef { counts in
            switch answer.kind {
            case .success: counts.ended(.success, code: 0, nanoseconds: nanoseconds)
            case .cancel: counts.ended(.cancel, code: 0, nanoseconds: nanoseconds)
            case .error:
                let code = ErrorCodeLabel.index(of: answer.outcome.value("errorCode"))
                counts.ended(.error, code: code, nanoseconds: nanoseconds)
                if code == ErrorCodeLabel.invalidURL { sink.input?.invalidLines.add() }
            }
        }
    }
}

extension UnroutedRequest {
    var endedBy: Unmanaged<PluginMetrics>? { nil }
    var fineStarted: UInt64 { 0 }
    func timed(_ nanoseconds: UInt64, by dispatcher: Dispatcher) {}
}

extension GeneralRequest {
    var endedBy: Unmanaged<PluginMetrics>? { pending.currentCounts.map(Unmanaged.passUnretained) }
    var fineStarted: UInt64 { pending.fineStarted }
    func timed(_ nanoseconds: UInt64, by dispatcher: Dispatcher) { dispatcher.generalSampler.measured(nanoseconds) }
}

extension LaneRequest {
    var endedBy: Unmanaged<PluginMetrics>? { counts }
    var fineStarted: UInt64 { call.fineStarted }
    func timed(_ nanoseconds: UInt64, by dispatcher: Dispatcher) { lane.sampler.measured(nanoseconds) }
}

extension SlotRequest {
    var endedBy: Unmanaged<PluginMetrics>? { counts }
    var fineStarted: UInt64 { fineStartedAt }
    func timed(_ nanoseconds: UInt64, by dispatcher: Dispatcher) { sampler.measured(nanoseconds) }
}
