import Testing
@testable import XCallbackHost
@testable import XCallbackSystem
import XCallbackRouting
import XCallbackURL

/// `InFlightTable`: one clock applies one deadline rule to the three places
/// a request waits. Driven with a fake owner that logs what it is asked to
/// end; deadlines are in the past or an hour ahead, and the waits are
/// bounded waits on the table's own calls, never on a quiet machine's time.
@Suite("In-flight table")
struct InFlightTableTests {
    /// Logs every request and lane call the table finds over.
    final class Owner: InFlightOwner {
        let expired = EventLog<UInt64>()
        /// (the lane, the cutoff it was swept with)
        let laneSweeps = EventLog<(ObjectIdentifier, UInt64)>()

        func expire(_ request: PendingRequest) { expired.append(request.request.id) }

        func expireLaneCall(in lane: FastLane, startedBefore cutoff: UInt64) {
            laneSweeps.append((ObjectIdentifier(lane), cutoff))
        }
    }

    struct Discard: RecordReceiver {
        func receive(_ record: OutcomeRecord) {}
    }

    static let sink = OutputSink(receiver: Discard(), format: .url, tally: OutcomeTally())

    static func request(_ id: UInt64, deadline: UInt64) -> PendingRequest {
        PendingRequest(id: id, sequence: id, input: "", url: RequestURL(scheme: "t"), urlText: "t://x", hop: 0,
                       sink: sink, deadline: deadline, table: RouteTable<RouteTarget>())
    }

    @Test("each tick sweeps every watched lane with the cutoff now minus the timeout")
    func lanesAreSweptWithTheCutoff() async {
        let owner = Owner()
        let timeout = Duration.seconds(5)
        let table = InFlightTable(timeout: timeout)
        defer { table.stop() }
        let lane = FastLane()
        table.watch(lane)
        let before = MonotonicClock.now
        table.start(owner: owner)
        let sweeps = await owner.laneSweeps.waitAsync { $0.count >= 2 }
        #expect(sweeps.count >= 2, "the clock did not sweep the lane")
        for (identifier, cutoff) in sweeps {
            #expect(identifier == ObjectIdentifier(lane))
            // Sent before now - timeout: never a cutoff ahead of the clock minus the timeout.
            #expect(cutoff >= before - timeout.nanoseconds && cutoff <= MonotonicClock.now - timeout.nanoseconds)
        }
        withExtendedLifetime(lane) {}
    }

    @Test("a lane that is gone is no longer swept, and not kept alive")
    func goneLanesAreDropped() async {
        let owner = Owner()
        let table = InFlightTable(timeout: .seconds(5))
        defer { table.stop() }
        weak var gone: FastLane?
        do {
            let lane = FastLane()
            gone = lane
            table.watch(lane)
        }
        #expect(gone == nil, "the table kept a lane alive")
        table.start(owner: owner)
        // A sweep of a general request proves the clock ran past several ticks.
        table.add(Self.request(1, deadline: MonotonicClock.now))
        _ = await owner.expired.waitAsync { !$0.isEmpty }
        #expect(owner.laneSweeps.all.isEmpty)
    }

    @Test("expireAll ends the general path's requests and sweeps the lanes with no cutoff")
    func expireAllTakesEverything() async {
        let owner = Owner()
        let table = InFlightTable(timeout: .seconds(3600))
        defer { table.stop() }
        let lane = FastLane()
        table.watch(lane)
        let hour: UInt64 = 3_600_000_000_000
        for id in 1...3 { table.add(Self.request(UInt64(id), deadline: MonotonicClock.now + hour)) }
        // Not started: nothing but expireAll ends them.
        table.start(owner: owner)
        table.expireAll()
        #expect(owner.expired.all.sorted() == [1, 2, 3])
        #expect(owner.laneSweeps.all.contains { $0.0 == ObjectIdentifier(lane) && $0.1 == .max })
        withExtendedLifetime(lane) {}
    }
}
