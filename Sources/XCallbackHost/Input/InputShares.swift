import Synchronization
import XCallbackSystem

/// Each plug-in's share of one input's window (`InputLoop.maxInFlight`),
/// so that a plug-in that stops answering costs the input's other plug-ins
/// nothing (docs/reliability.md, "A fair share of each input").
///
/// For every plug-in, in its own slot (`ShareSlots`: one per name, no two
/// plug-ins share one), one atomic word: the requests of this input the
/// plug-in holds (dispatched, not yet ended) in its low 32 bits, and how
/// many of them it answered itself in its high 32 bits. A request takes
/// one add when it is dispatched and one when it ends, and no lock: the
/// fast lanes pay two atomic operations a request.
///
/// The share, as `InputLoop` and `charge` apply it:
/// - while a plug-in answers, its requests count in the window like any
///   other's: a flood for one plug-in is paced by the window, as before,
///   and nothing is refused;
/// - once it holds requests and has answered none of them for
///   `stallPatience`, it has stalled: its share of the window is none. Its
///   requests leave the window (the input reads on for the others) and
///   wait in its own line, what it holds of this input, up to `stalledCap`;
///   past that each new one is refused `PluginUnavailable` at once. One
///   answer of its own ends the stall.
///
/// Slots live in pages of `pageSize`, made when a plug-in of theirs first
/// takes a request of this input: an input that only ever sees a few
/// plug-ins keeps one page.
final class InputShares: Sendable {
    static let pageSize = 64
    static let pageCount = 64
    /// How long a plug-in may hold requests of an input without answering
    /// any before it has stalled.
    static let stallPatience: UInt64 = 250_000_000
    /// The most requests of one input a stalled plug-in may hold (its
    /// line): sixteen windows. A plug-in whose worker is restarting after a
    /// crash answers none for as long as the restart takes, and looks
    /// stalled: while it does, the input reads ahead for it, and a line of
    /// one window was full within a loaded restart (CrashCollateralTests
    /// saw its innocent requests refused). Like the worker's waiting line,
    /// the line is a bound for memory, not a pace.
    static let stalledCap: UInt64 = 16 * InputLoop.maxInFlight

    private static let heldMask: UInt64 = 0xFFFF_FFFF
    /// Added when a request ends answered by its plug-in: one answer more,
    /// one request held less, in one operation (held is at least 1, so the
    /// low half never borrows from the high one).
    private static let answeredEnd: UInt64 = (1 << 32) - 1

    /// Each page's address (0: not made yet). A page holds, for each of its
    /// slots, three words, each kind side by side: the count word, then the
    /// answers last seen and when they were seen to move (coarse ns; 0: not
    /// looked at since the slot held nothing), which only the rare paths
    /// touch (a look while requests pile up, a refusal check).
    // Atomics need stable addresses: allocated once, only ever touched
    // through `Atomic`'s own operations.
    private nonisolated(unsafe) let pages: UnsafeMutablePointer<Atomic<UInt>>

    init() {
        pages = .allocate(capacity: Self.pageCount)
        for index in 0..<Self.pageCount { (pages + index).initialize(to: Atomic(0)) }
    }

    deinit {
        for index in 0..<Self.pageCount {
            if let page = UnsafeMutablePointer<Atomic<UInt64>>(bitPattern: pages[index].load(ordering: .acquiring)) {
                page.deinitialize(count: 3 * Self.pageSize)
                page.deallocate()
            }
        }
        pages.deinitialize(count: Self.pageCount)
        pages.deallocate()
    }

    /// A request for the plug-in in `slot` is dispatched: false, having
    /// counted nothing, if the plug-in has stalled and already holds
    /// `stalledCap` of this input's requests (the caller refuses it). A
    /// slot of -1 (`ShareSlots` full) is never counted.
    func charge(_ slot: Int, now: @autoclosure () -> UInt64 = MonotonicClock.coarseNow) -> Bool {
        guard slot >= 0 else { return true }
        let page = page(of: slot)
        let index = slot % Self.pageSize
        let old = page[index].wrappingAdd(1, ordering: .relaxed).oldValue
        guard old & Self.heldMask >= Self.stalledCap else { return true }
        guard isStalled(page, index, word: old &+ 1, now: now()) else { return true }
        page[index].wrappingSubtract(1, ordering: .relaxed)
        return false
    }

    /// As `charge`, never refused: a request already running (an in-process
    /// handler that kept its reply) is counted all the same.
    func chargeRunning(_ slot: Int) {
        guard slot >= 0 else { return }
        page(of: slot)[slot % Self.pageSize].wrappingAdd(1, ordering: .relaxed)
    }

    /// A request `charge` counted has ended; `answered` when the plug-in
    /// itself answered it (not a `Timeout` or another of the host's own
    /// errors given in its place: `Ending.isPluginAnswer`).
    func release(_ slot: Int, answered: Bool) {
        guard slot >= 0 else { return }
        page(of: slot)[slot % Self.pageSize].wrappingAdd(answered ? Self.answeredEnd : UInt64.max,
                                                         ordering: .relaxed)
    }

    /// How many requests the plug-in in `slot` holds.
    func held(_ slot: Int) -> UInt64 {
        guard slot >= 0, let page = existingPage(slot / Self.pageSize) else { return 0 }
        return page[slot % Self.pageSize].load(ordering: .relaxed) & Self.heldMask
    }

    /// How many of them it answered itself, so far (wraps at 2^32).
    func answered(_ slot: Int) -> UInt64 {
        guard slot >= 0, let page = existingPage(slot / Self.pageSize) else { return 0 }
        return page[slot % Self.pageSize].load(ordering: .relaxed) >> 32
    }

    /// The slots of the plug-ins that have stalled. Looks at every slot of
    /// the pages made, and starts the clock of each that holds requests:
    /// called by the input's thread only while requests pile up (a quarter
    /// of the window or more in flight), every few lines (`InputLoop`).
    func stalledSlots(now: UInt64) -> [Int] {
        var stalled: [Int] = []
        for number in 0..<Self.pageCount {
            guard let page = existingPage(number) else { continue }
            for index in 0..<Self.pageSize
            where isStalled(page, index, word: page[index].load(ordering: .relaxed), now: now) {
                stalled.append(number * Self.pageSize + index)
            }
        }
        return stalled
    }

    /// The requests the plug-ins in `slots` hold now: the part of the
    /// window they no longer take.
    func held(in slots: [Int]) -> UInt64 {
        slots.reduce(0) { $0 + held($1) }
    }

    /// Whether the plug-in at `index` of `page`, whose word is `word`, has
    /// held requests and answered none of them for `stallPatience`. Its
    /// clock starts when this is first asked while it holds some, and again
    /// whenever its answers have moved since.
    private func isStalled(_ page: UnsafeMutablePointer<Atomic<UInt64>>, _ index: Int, word: UInt64,
                           now: UInt64) -> Bool {
        let seenAnswers = page + Self.pageSize + index
        let seenAt = page + 2 * Self.pageSize + index
        guard word & Self.heldMask != 0 else {
            seenAt.pointee.store(0, ordering: .relaxed)
            return false
        }
        let answers = word >> 32
        let since = seenAt.pointee.load(ordering: .relaxed)
        if since == 0 || seenAnswers.pointee.load(ordering: .relaxed) != answers {
            seenAnswers.pointee.store(answers, ordering: .relaxed)
            seenAt.pointee.store(max(now, 1), ordering: .relaxed)
            return false
        }
        return now > since && now - since >= Self.stallPatience
    }

    /// The page of `slot`, made if it is the first request of its plug-ins.
    private func page(of slot: Int) -> UnsafeMutablePointer<Atomic<UInt64>> {
        let number = slot / Self.pageSize
        return existingPage(number) ?? makePage(number)
    }

    private func existingPage(_ number: Int) -> UnsafeMutablePointer<Atomic<UInt64>>? {
        UnsafeMutablePointer(bitPattern: pages[number].load(ordering: .acquiring))
    }

    /// Makes page `number`; if another thread made it first, takes theirs.
    private func makePage(_ number: Int) -> UnsafeMutablePointer<Atomic<UInt64>> {
        let page = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: 3 * Self.pageSize)
        for index in 0..<3 * Self.pageSize { (page + index).initialize(to: Atomic(0)) }
        let (made, existing) = pages[number].compareExchange(expected: 0, desired: UInt(bitPattern: page),
                                                             ordering: .acquiringAndReleasing)
        if made { return page }
        page.deinitialize(count: 3 * Self.pageSize)
        page.deallocate()
        return UnsafeMutablePointer(bitPattern: existing)!
    }
}
