import Testing
@testable import XCallbackHost
import XCallbackSystem

/// `InputShares`, each plug-in's share of one input's window: held and
/// answered counts in one word per plug-in, in a slot of its own
/// (`ShareSlots`); a plug-in stalled once it has held requests and answered
/// none for `stallPatience`, and refused only then, past `stalledCap`.
/// Times are given, so nothing here sleeps.
@Suite("Input shares")
struct InputSharesTests {
    static let patience = InputShares.stallPatience
    static let cap = InputShares.stalledCap

    @Test("each plug-in name has a slot of its own, the same every time, inside the table")
    func slots() {
        let names = (0..<300).map { "share-test-plug-in-\($0)" } + ["", "é", String(repeating: "é", count: 300)]
        let slots = names.map(ShareSlots.slot(of:))
        #expect(Set(slots).count == names.count, "two names share a slot")
        #expect(slots.allSatisfy { (0..<ShareSlots.capacity).contains($0) })
        #expect(names.map(ShareSlots.slot(of:)) == slots)
    }

    @Test("charges and releases: held counts what is out, whatever ended it, slot by slot")
    func heldCounts() {
        let shares = InputShares()
        // Neighbours, in one page and across pages, never see each other's counts.
        for slot in [3, 4, 63, 64, ShareSlots.capacity - 1] {
            #expect(shares.charge(slot) && shares.charge(slot))
            shares.chargeRunning(slot)
        }
        #expect(shares.held(3) == 3 && shares.held(4) == 3 && shares.held(64) == 3)
        #expect(shares.held(ShareSlots.capacity - 1) == 3 && shares.held(5) == 0 && shares.held(200) == 0)
        shares.release(3, answered: true)
        shares.release(3, answered: false)
        #expect(shares.held(3) == 1 && shares.answered(3) == 1)
        shares.release(3, answered: true)
        #expect(shares.held(3) == 0 && shares.answered(3) == 2)
        #expect(shares.held(4) == 3 && shares.answered(4) == 0)
        // A plug-in past the table's slots is never counted, nor refused.
        #expect(shares.charge(-1))
        shares.release(-1, answered: false)
        #expect(shares.held(-1) == 0)
    }

    @Test("stalled after the patience without an answer; an answer ends it; an empty slot never is")
    func stalls() {
        let shares = InputShares()
        let start: UInt64 = 1_000_000_000_000
        #expect(shares.stalledSlots(now: start).isEmpty)
        #expect(shares.charge(7) && shares.charge(7) && shares.charge(70))
        shares.release(70, answered: true)
        // The clock starts at the first look.
        #expect(shares.stalledSlots(now: start).isEmpty)
        #expect(shares.stalledSlots(now: start + Self.patience - 1).isEmpty)
        #expect(shares.stalledSlots(now: start + Self.patience) == [7])
        #expect(shares.held(in: [7]) == 2)
        // Its Timeout is not an answer: still stalled.
        shares.release(7, answered: false)
        #expect(shares.stalledSlots(now: start + 2 * Self.patience) == [7])
        // An answer is: the clock starts again.
        #expect(shares.charge(7))
        shares.release(7, answered: true)
        #expect(shares.stalledSlots(now: start + 3 * Self.patience).isEmpty)
        #expect(shares.stalledSlots(now: start + 4 * Self.patience) == [7])
        // Holding nothing, it has not stalled, and its clock starts afresh.
        shares.release(7, answered: false)
        #expect(shares.stalledSlots(now: start + 5 * Self.patience).isEmpty)
        #expect(shares.charge(7))
        #expect(shares.stalledSlots(now: start + 5 * Self.patience + 1).isEmpty)
    }

    @Test("refused past the stalled cap only while stalled; not counted when refused")
    func refusal() {
        let shares = InputShares()
        let start: UInt64 = 1_000_000_000_000
        // Never seen stalled: counted all the same (the window holds it back).
        for _ in 0..<Self.cap { #expect(shares.charge(10, now: start)) }
        #expect(shares.charge(10, now: start))
        #expect(shares.held(10) == Self.cap + 1)
        // Seen holding requests, no answer for the patience: refused, not counted.
        for _ in 0..<Self.cap { #expect(shares.charge(9, now: start)) }
        #expect(shares.stalledSlots(now: start).isEmpty)
        #expect(shares.charge(9, now: start + Self.patience - 1))
        #expect(!shares.charge(9, now: start + Self.patience))
        #expect(!shares.charge(9, now: start + Self.patience + 1))
        #expect(shares.held(9) == Self.cap + 1)
        // Back under the cap by Timeouts (not answers): room up to the cap.
        shares.release(9, answered: false)
        shares.release(9, answered: false)
        #expect(shares.charge(9, now: start + Self.patience + 2))
        #expect(!shares.charge(9, now: start + Self.patience + 2))
        // One answer, and it is taken again: the clock starts afresh.
        shares.release(9, answered: true)
        #expect(shares.charge(9, now: start + Self.patience + 3) && shares.charge(9, now: start + Self.patience + 3))
    }
}
