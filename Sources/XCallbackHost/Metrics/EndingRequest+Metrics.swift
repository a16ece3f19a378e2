import XCallbackMetrics
import XCallbackSystem
import XCallbackURL

// Where `run --metrics` learns how each request ended: `Dispatcher.end`,
// the one place every request ends, calls `countEnded` just before the
// record is written (a chain's hops are not counted; its last outcome is).

extension Dispatcher {
    /// Counts a request that ends in a record: by plug-in, outcome and
    /// code, its latency, its input's records and invalid lines. A few
    /// relaxed atomic adds; nothing at all when metrics are off.
    @inline(__always)
    func countEnded(_ answer: Ending, of request: some EndingRequest, to sink: OutputSink) {
        guard let metrics else { return }
        countEnded(answer, of: request, to: sink, in: metrics)
    }

    private func countEnded(_ answer: Ending, of request: some EndingRequest, to sink: OutputSink, in metrics: HostMetrics) {
        let outcome: OutcomeClass
        var code = 0
        switch answer.kind {
        case .success: outcome = .success
        case .cancel: outcome = .cancel
        case .error:
            outcome = .error
            code = ErrorCodeLabel.index(of: answer.outcome.value("errorCode"))
        }
        let started = request.started(timeout: timeout.nanoseconds)
        let now = MonotonicClock.coarseNow
        metrics.ended(plugin: request.endedBy, outcome, code: code, nanoseconds: started != 0 && now > started ? now - started : 0)
        if let input = sink.input {
            input.records.add()
            if code == ErrorCodeLabel.invalidURL && outcome == .error { input.invalidLines.add() }
        }
    }
}

extension UnroutedRequest {
    var endedBy: String? { nil }
    func started(timeout: UInt64) -> UInt64 { 0 }
}

extension GeneralRequest {
    var endedBy: String? { pending.currentPlugin }
    func started(timeout: UInt64) -> UInt64 { pending.deadline &- timeout }
}

extension LaneRequest {
    var endedBy: String? { call.plugin }
    func started(timeout: UInt64) -> UInt64 { call.started }
}

extension SlotRequest {
    var endedBy: String? { plugin }
    func started(timeout: UInt64) -> UInt64 { startedAt }
}
