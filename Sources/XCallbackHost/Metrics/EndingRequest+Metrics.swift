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
    /// code, its latency, and its input's invalid lines (its records are
    /// the sink's own count, `StreamCounts`). One relaxed atomic add for a
    /// success or cancel; nothing at all when metrics are off.
    @inline(__always)
    func countEnded(_ answer: Ending, of request: some EndingRequest, to sink: OutputSink) {
        unretainedMetrics?._withUnsafeGuaranteedRef { countEnded(answer, of: request, to: sink, in: $0) }
    }

    private func countEnded(_ answer: Ending, of request: some EndingRequest, to sink: OutputSink, in metrics: HostMetrics) {
        let started = request.started(timeout: timeoutNanoseconds)
        var nanoseconds: UInt64 = 0
        if started != 0 {
            let now = MonotonicClock.coarseNow
            if now > started { nanoseconds = now - started }
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
    func started(timeout: UInt64) -> UInt64 { 0 }
}

extension GeneralRequest {
    var endedBy: Unmanaged<PluginMetrics>? { pending.currentCounts.map(Unmanaged.passUnretained) }
    func started(timeout: UInt64) -> UInt64 { pending.deadline &- timeout }
}

extension LaneRequest {
    var endedBy: Unmanaged<PluginMetrics>? { counts }
    func started(timeout: UInt64) -> UInt64 { call.started }
}

extension SlotRequest {
    var endedBy: Unmanaged<PluginMetrics>? { counts }
    func started(timeout: UInt64) -> UInt64 { startedAt }
}
