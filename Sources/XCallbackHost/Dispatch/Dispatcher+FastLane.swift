import CXCallback
import XCallbackBridge
import XCallbackMetrics
import XCallbackSystem
import XCallbackURL

// The fast lane: a line whose route is all literals and leads to a native
// handler in this process goes from bytes to record in one pass, with the
// request refilled in place and the reply left in its slot. Anything else,
// and any line the lane is unsure of, takes the general path (`submit`),
// which is also where every error message comes from. A handler that keeps
// its reply, declines, or runs past its deadline is handed to the general
// path mid-way (promotion), so the two paths give the same outcomes.
extension Dispatcher {
    /// A lane for one input stream; the deadline timer watches it.
    func makeLane() -> FastLane {
        let lane = FastLane()
        inFlight.watch(lane)
        return lane
    }

    /// Dispatches one line on `lane` (entered by the caller). Returns false,
    /// having done nothing anyone can see, when the line needs `submit`.
    func submitFast(line: UnsafeBufferPointer<UInt8>, sequence: UInt64, sink: OutputSink, lane: FastLane) -> Bool {
        if lane.generation != registry.generation {
            let (snapshot, generation) = registry.routeSnapshot()
            lane.use(snapshot, generation: generation)
        }
        // Borrowed, not retained: the lane keeps its snapshot until this
        // thread swaps it, above, for the next line.
        guard let snapshot = lane.snapshot else { return false }
        return snapshot._withUnsafeGuaranteedRef { snapshot in
            submitFast(line: line, sequence: sequence, sink: sink, lane: lane, snapshot: snapshot)
        }
    }

    private func submitFast(line: UnsafeBufferPointer<UInt8>, sequence: UInt64, sink: OutputSink, lane: FastLane,
                            snapshot: RouteSnapshot) -> Bool {
        guard snapshot.hasFastRoutes, sink.opener == nil, sink.receiver == nil,
              line.count <= limits.maxLineBytes, lane.line.parse(line),
              let routeIndex = lane.literalRoute(in: line, snapshot: snapshot)
        else { return false }
        guard let route = snapshot.unretainedNative[routeIndex] else {
            guard let target = snapshot.workers[routeIndex] else { return false }
            return submitToWorker(target, line: line, sequence: sequence, sink: sink, lane: lane, snapshot: snapshot)
        }
        // A callback the host could never deliver to is refused up front by
        // `submit`, with the message.
        guard lane.hasDeliverableCallbacks(line), let slot = HostAPI.replies.readySlot(&lane.replySlot)
        else { return false }
        // Each borrowed, not retained: the snapshot keeps its routes, the
        // reply table its slots, and the lane its request until this thread
        // replaces it (after the call, in `runNative`).
        return route._withUnsafeGuaranteedRef { route in
            slot._withUnsafeGuaranteedRef { slot in
                lane.native._withUnsafeGuaranteedRef { native in
                    runNative(route, on: slot, request: native, line: line, sequence: sequence, sink: sink,
                              lane: lane, snapshot: snapshot)
                }
            }
        }
    }

    /// Runs the line's native handler, in place, and ends its request.
    private func runNative(_ route: RouteSnapshot.NativeRoute, on slot: SynchronousSlot, request native: NativeRequest,
                           line: UnsafeBufferPointer<UInt8>, sequence: UInt64, sink: OutputSink, lane: FastLane,
                           snapshot: RouteSnapshot) -> Bool {
        let filled = route.patternBytes.withUnsafeBufferPointer { pattern in
            native.fill(line: line, parsed: lane.parsedLine, route: route.pattern, routeBytes: pattern)
        }
        guard filled else { return false }

        // From here on the request is taken: it ends in exactly one outcome.
        let id = nextID()
        native.assign(id: id)
        let started = MonotonicClock.coarseNow
        // Beside the coarse stamp (the deadline's), a fine one for the
        // latency of the requests the lane samples.
        var fineStarted: UInt64 = 0
        if unretainedMetrics != nil {
            fineStarted = lane.sampler.fineStart(tick: started)
            if fineStarted != lane.fineStarted.load(ordering: .relaxed) {
                lane.fineStarted.store(fineStarted, ordering: .relaxed)
            }
        }
        // Made for the slot alone, and moved there: a copy kept here cost a
        // retain and a release of the plug-in's name.
        let reply = HostAPI.replies.openSynchronous(
            on: slot, request: native,
            call: SynchronousCall(line: line, id: id, sequence: sequence, sink: sink, started: started,
                                  plugin: route.plugin, capture: lane.capture, owner: self),
            name: route.callName)
        lane.inFlight.store(reply.token &+ 1, ordering: .releasing)
        route.mark.whileRunning { route.function(native.opaque, reply, route.userData) }
        lane.inFlight.store(0, ordering: .releasing)

        var promoted: PendingRequest?
        let end = HostAPI.replies.endSynchronous(reply, on: slot) { call in
            let (pending, handlerCall) = takeOver(call, reply: reply, fineStarted: fineStarted)
            promoted = pending
            return handlerCall.deliver
        }
        let laneCall = LaneRequest.Call(line: line, id: id, sequence: sequence, started: started,
                                        fineStarted: fineStarted)
        switch end {
        case .completedInPlace:
            let capture = lane.capture
            capture.withParameters { parameters, base in
                self.end(.bytes(capture.kind, parameters: parameters, in: base),
                         of: LaneRequest(call: laneCall, sink: sink, lane: lane, snapshot: snapshot,
                                         dispatcher: self, counts: route.unretainedCounts))
            }
        case .completed(.outcome(let outcome)):
            self.end(.outcome(outcome), of: LaneRequest(call: laneCall, sink: sink, lane: lane, snapshot: snapshot,
                                                        dispatcher: self, counts: route.unretainedCounts))
        case .completed(.declined):
            // The next candidate, on the general path; this attempt is over.
            let pending = handOver(line: line, id: id, sequence: sequence, sink: sink, started: started,
                                   fineStarted: fineStarted)
            inFlight.add(pending)
            attempt(pending, declinedBy: route.plugin)
        case .promoted:
            // The handler kept its reply: the request now waits like any
            // other, and keeps the native request it is reading (`native`
            // is not used past this).
            if let promoted { inFlight.add(promoted) }
            lane.replaceNative()
        case .promotedEarlier:
            lane.replaceNative()
        }
        return true
    }

    /// The request of a fast call as the general path keeps it (`handOver`).
    func generalRequest(for call: SynchronousCall, fineStarted: UInt64 = 0) -> PendingRequest {
        handOver(line: call.line, id: call.id, sequence: call.sequence, sink: call.outputSink, started: call.started,
                 fineStarted: fineStarted)
    }

    /// A decline while the handler still runs: the general path takes the
    /// request over at once and tries the next route, with the time left
    /// (from another thread, maybe: its latency is not sampled).
    func takeOver(_ call: SynchronousCall, reply: xcallback_reply) -> ReplyTable.Delivery {
        let (pending, handlerCall) = takeOver(call, reply: reply)
        inFlight.add(pending)
        return handlerCall.deliver
    }

    /// Promotion: the general path takes over a call still in its handler.
    /// Its plug-in's counts are looked up by name here, once: the call
    /// does not carry them (a larger `SynchronousCall` is copied with
    /// `memcpy` wherever the reply table moves one).
    private func takeOver(_ call: SynchronousCall, reply: xcallback_reply,
                          fineStarted: UInt64 = 0) -> (PendingRequest, HandlerCall) {
        let pending = generalRequest(for: call, fineStarted: fineStarted)
        // From now on it may be held as long as the handler keeps its reply.
        let slot = ShareSlots.slot(of: call.plugin)
        call.outputSink.shares.chargeRunning(slot)
        pending.charged(slot)
        let handlerCall = begin(pending, plugin: call.plugin, counts: metrics?.counts(of: call.plugin))
        handlerCall.whenAbandoned { HostAPI.replies.expire(reply) }
        return (pending, handlerCall)
    }

    /// The clock's side of the lane (`InFlightTable`): a handler running
    /// since before `cutoff` is taken over and answered `Timeout`, as on the
    /// general path (and one that answered but never returned has its
    /// answer delivered).
    func expireLaneCall(in lane: FastLane, startedBefore cutoff: UInt64) {
        let marker = lane.inFlight.load(ordering: .acquiring)
        guard marker != 0 else { return }
        let reply = xcallback_reply(token: marker - 1)
        var takenOver: (PendingRequest, HandlerCall)?
        let answer = HostAPI.replies.promoteSynchronous(reply, startedBefore: cutoff) { call in
            // The lane's one call in flight is this one: its fine start is
            // the lane's (the call does not carry it: see `SynchronousCall`).
            takenOver = takeOver(call, reply: reply, fineStarted: lane.fineStarted.load(ordering: .relaxed))
            return takenOver!.1.deliver
        }
        guard case .some(let result) = answer, let (pending, handlerCall) = takenOver else { return }
        if case .outcome = result {
            handlerCall.deliver(result!)
        } else {
            // Still running, unanswered, past its deadline. (A decline
            // never waits here: it is taken over when it is given.)
            expire(pending)
        }
    }
}
