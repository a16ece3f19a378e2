import XCallbackBridge
import XCallbackMetrics
import XCallbackURL
import XCallbackWire

// The fast lane to a worker: a line whose literal route leads to a plug-in
// in a worker process goes out as a request frame written from the line's
// bytes, and the host keeps it in a slot of the worker's table
// (`WorkerSlots`) instead of a `PendingRequest`, a `HandlerCall` and a timer
// entry. A success or cancel answer becomes its record straight from the
// answer's bytes on the worker's reply thread (`WorkerProcess`). Anything
// else (an error, a decline, a timeout, a worker that died) makes the
// general path adopt the request, so both paths give the same outcomes.
extension Dispatcher: WorkerLaneOwner {
    /// Sends a line the fast lane parsed to its worker; false, having done
    /// nothing anyone can see, when it needs `submit`.
    func submitToWorker(_ target: RouteSnapshot.WorkerRoute, line: UnsafeBufferPointer<UInt8>, sequence: UInt64,
                        sink: OutputSink, lane: FastLane, snapshot: RouteSnapshot) -> Bool {
        // Records the lane writes from bytes; a chain (a callback to one of
        // this host's schemes) is the general path's.
        guard sink.format == .url, !sink.keepOrder, lane.hasDeliverableCallbacks(line) else { return false }
        let callbacks = lane.decodedCallbacks
        func routed(_ callback: UnsafeBufferPointer<UInt8>?) -> Bool { callback.map(snapshot.routesScheme(of:)) ?? false }
        guard !routed(callbacks.success), !routed(callbacks.error), !routed(callbacks.cancel) else { return false }
        guard let worker = target.endpoint.currentWorker else { return false }
        // Refused (a plug-in that stalled, holding its most): `submit` says so.
        guard sink.shares.charge(target.shareSlot) else { return false }
        guard worker.sendFast(handler: target.handler, line: line, parsed: lane.parsedLine, callbacks: callbacks,
                              sequence: sequence, sink: sink, owner: self, counts: target.endpoint.counts)
        else {
            sink.shares.release(target.shareSlot, answered: false)
            return false
        }
        return true
    }

    /// Takes a request over from a worker's slot: from here on it is a
    /// pending request like any other, whose first route was tried.
    func adopt(_ request: inout WorkerSlots.Request, started: UInt64, plugin: String,
               counts: PluginMetrics?, shareSlot: Int) -> AdoptedRequest {
        let pending = request.withLine { line in
            handOver(line: line, id: request.requestID, sequence: request.sequence, sink: request.sink!, started: started,
                     fineStarted: request.fineStarted)
        }
        // Counted when the lane sent it (`submitToWorker`); ends as the pending one.
        pending.charged(shareSlot)
        let call = begin(pending, plugin: plugin, counts: counts)
        inFlight.add(pending)
        return AdoptedRequest(call: call, fields: pending.fields(arguments: []), expire: { [self] in expire(pending) })
    }

    /// Ends a request in a worker's slot with the answer its reply thread
    /// read in place.
    func end(_ answer: Ending, ofSlot request: inout WorkerSlots.Request, counts: Unmanaged<PluginMetrics>?,
             sampler: LatencySampler, shareSlot: Int) {
        // The fields the ending reads, taken once: read through a pointer
        // to the slot, each read copied the whole slot (retaining its arrays).
        let sequence = request.sequence
        let fineStarted = request.fineStarted
        // The slot keeps it until the ending is over.
        unowned(unsafe) let sink = request.sink!
        let named = WorkerSlots.NamedCallbacks(request)
        // The frame is not read: no url record shows the line, and its
        // buffer is the input thread's to fill next (reading it here pulled
        // its cache lines over to this core).
        request.callbacks.withUnsafeBufferPointer { callbacks in
            end(answer, of: SlotRequest(sequence: sequence, sink: sink, callbacks: callbacks, named: named,
                                        dispatcher: self, counts: counts, fineStartedAt: fineStarted,
                                        sampler: sampler, shareSlot: shareSlot))
        }
    }

    /// Watches `worker`'s slots for deadlines (`InFlightTable`).
    func watch(_ worker: WorkerProcess) { inFlight.watch(worker) }
}

/// What the worker's side needs of the dispatcher.
protocol WorkerLaneOwner: AnyObject, Sendable {
    /// `shareSlot`: the plug-in's slot in the input's shares, which
    /// counted every request its lane sent (`InputShares`).
    func adopt(_ request: inout WorkerSlots.Request, started: UInt64, plugin: String, counts: PluginMetrics?,
               shareSlot: Int) -> AdoptedRequest
    func end(_ answer: Ending, ofSlot request: inout WorkerSlots.Request, counts: Unmanaged<PluginMetrics>?,
             sampler: LatencySampler, shareSlot: Int)
    func watch(_ worker: WorkerProcess)
    /// A new request id (`request_id`), taken only once the request is
    /// surely sent.
    func nextID() -> UInt64
}

/// A request from a worker's slot, now on the general path: the call its
/// result is delivered through, the fields to send it again with (a worker
/// that died before it began it), and how to answer it `Timeout`.
struct AdoptedRequest: Sendable {
    var call: HandlerCall
    var fields: RequestFields
    var expire: @Sendable () -> Void
}

/// A request a worker's lane sent from its line, still in its slot.
/// Made on the reply thread's stack for one ending, while the slot holds
/// the sink and the worker its dispatcher: so both unretained. A retain of
/// the dispatcher (which weak references point at) is a slow one.
struct SlotRequest: EndingRequest {
    let sequence: UInt64
    unowned(unsafe) let sink: OutputSink
    /// Its decoded callbacks, and which of them the line named.
    let callbacks: UnsafeBufferPointer<UInt8>
    let named: WorkerSlots.NamedCallbacks
    unowned(unsafe) let dispatcher: Dispatcher
    /// The worker's plug-in's counts; when the lane sent the request on the
    /// fine clock if it sampled it (0: not), and the sampler that did.
    let counts: Unmanaged<PluginMetrics>?
    let fineStartedAt: UInt64
    unowned(unsafe) let sampler: LatencySampler
    /// The worker's plug-in's slot in the input's shares (`InputShares`).
    let shareSlot: Int

    /// None: the lane sends only requests whose records are urls
    /// (`submitToWorker`); a jsonl record, which shows the line, comes
    /// from the general path.
    var input: String { "" }

    func withCallback<R>(for kind: OutcomeKind, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        body(named.callback(for: kind, in: callbacks))
    }

    /// None does: the lane sends no request whose callbacks go to the host's
    /// own routes (`submitToWorker`), so a slot never starts a chain.
    func routesScheme(of callback: UnsafeBufferPointer<UInt8>) -> Bool { false }
    func claimedForChain() -> PendingRequest? { nil }
}

extension WorkerSlots.Request {
    /// The line as read: the URL its frame carries.
    func withLine<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        frame.withUnsafeBytes { frame in
            // The host wrote this frame itself (`RequestFrame.writeLine`).
            let url = RequestFrame.url(ofFrame: frame)!
            return body(url.assumingMemoryBound(to: UInt8.self))
        }
    }
}

extension WorkerSlots {
    /// How long each of a slot's decoded callbacks is, back to back in its
    /// `callbacks`; -1 for one the line did not name.
    struct NamedCallbacks {
        var success: Int
        var error: Int
        var cancel: Int

        init(_ request: borrowing Request) {
            success = request.successCount
            error = request.errorCount
            cancel = request.cancelCount
        }

        /// The decoded callback for an answer of `kind`, if the line named
        /// one that is not empty (`OutcomeKind.callback` decides which).
        func callback(for kind: OutcomeKind, in bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
            func named(from start: Int, _ count: Int) -> UnsafeBufferPointer<UInt8>? {
                count >= 0 ? UnsafeBufferPointer(rebasing: bytes[start..<start + count]) : nil
            }
            let errorStart = max(success, 0)
            let cancelStart = errorStart + max(error, 0)
            return kind.callback(success: named(from: 0, success), error: named(from: errorStart, error),
                                 cancel: named(from: cancelStart, cancel))
        }
    }
}
