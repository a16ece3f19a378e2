#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
import XCallbackSystem

/// One fast lane's reply slot: the synchronous call the lane's thread is
/// inside (`ReplyTable.openSynchronous`), and the one word that says how
/// far that call has got.
///
/// Every party to a call (the handler completing it, the lane ending it,
/// the deadline timer promoting it, a log line naming its plug-in) moves
/// the word with one compare-and-exchange, so a request on the fast lane
/// takes no lock. Whoever moves it to `claimed` owns the slot's fields
/// until it moves it on; the lane's thread owns them while it is `idle`.
/// A claim is held for a copy or a hand-over, never across a wait, so the
/// others spin (yielding) until it ends.
public final class SynchronousSlot: @unchecked Sendable {
    // @unchecked: `call`, `request` and `result` are touched only by the
    // party the word names (see above).

    /// How far the call of the word's generation has got.
    enum Phase: UInt64 {
        /// No call: the last one ended, or was handed to the general path.
        case idle = 0
        /// The handler runs and has not answered.
        case running
        /// One party owns the fields for a moment.
        case claimed
        /// Answered into the call's `ReplyCapture`.
        case answeredInPlace
        /// Answered with `result`.
        case answered
    }

    /// The word: the generation in the high 32 bits, the phase in the low.
    struct Word: Equatable {
        var generation: UInt32
        var phase: Phase

        init(generation: UInt32, phase: Phase) {
            self.generation = generation
            self.phase = phase
        }

        init(_ raw: UInt64) {
            generation = UInt32(truncatingIfNeeded: raw >> 32)
            phase = Phase(rawValue: raw & 0xFFFF_FFFF) ?? .idle
        }

        var raw: UInt64 { UInt64(generation) << 32 | phase.rawValue }
    }

    /// The slot's number in its table: a token's index, less `ReplyTable.slotBit`.
    let number: UInt32
    private let word = Atomic<UInt64>(0)
    /// When the current call began (monotonic ns), readable without a
    /// claim, so the timer claims only a call that is old enough.
    let started = Atomic<UInt64>(0)

    @exclusivity(unchecked) var call: SynchronousCall?
    @exclusivity(unchecked) var request: NativeRequest?
    @exclusivity(unchecked) var result: HandlerResult?

    /// The slot's last `remembered` calls, each as three words: its
    /// generation (0 while it is written), its request id, and its plug-in
    /// and route (`ReplyTable.CallNames`). Plain numbers, written by the
    /// lane as it opens a call, so any thread can read one without a claim
    /// or a lock (`recorded`): a log line naming a call whose token comes
    /// back after the lane has moved on, or a metrics scrape.
    private let history: UnsafeMutablePointer<Atomic<UInt64>>
    static let remembered = 32

    init(number: UInt32, generation: UInt32) {
        self.number = number
        word.store(Word(generation: generation, phase: .idle).raw, ordering: .relaxed)
        history = .allocate(capacity: 3 * Self.remembered)
        for index in 0..<3 * Self.remembered { (history + index).initialize(to: Atomic(0)) }
    }

    deinit {
        history.deinitialize(count: 3 * Self.remembered)
        history.deallocate()
    }

    /// Records the call of `generation` (the lane, as it opens it).
    func record(generation: UInt32, requestID: UInt64, name: UInt32) {
        let entry = history + 3 * (Int(generation) % Self.remembered)
        // A sequence lock: the key is 0 while the entry changes.
        entry[0].store(0, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        entry[1].store(requestID, ordering: .relaxed)
        entry[2].store(UInt64(name), ordering: .relaxed)
        entry[0].store(UInt64(generation), ordering: .releasing)
    }

    /// The request id and names of the call of `generation`, while the
    /// slot still remembers it.
    func recorded(generation: UInt32) -> (requestID: UInt64, name: UInt32)? {
        let entry = history + 3 * (Int(generation) % Self.remembered)
        guard entry[0].load(ordering: .acquiring) == UInt64(generation) else { return nil }
        let requestID = entry[1].load(ordering: .relaxed)
        let name = UInt32(truncatingIfNeeded: entry[2].load(ordering: .relaxed))
        atomicMemoryFence(ordering: .acquiring)
        guard entry[0].load(ordering: .relaxed) == UInt64(generation) else { return nil }
        return (requestID, name)
    }

    var current: Word { Word(word.load(ordering: .acquiring)) }

    /// Whether its generations are spent: no call can open on it again, so
    /// a lane swaps it for another and it is never handed out again.
    var isSpent: Bool { current.generation == .max }

    /// Moves the word from `expected` to `desired`; false if it was not `expected`.
    func move(from expected: Word, to desired: Word) -> Bool {
        word.compareExchange(expected: expected.raw, desired: desired.raw, ordering: .acquiringAndReleasing).exchanged
    }

    /// Sets the word, by the party that holds it (the lane, or a claim).
    func set(_ desired: Word) {
        word.store(desired.raw, ordering: .releasing)
    }

    /// The word for `generation` once no claim holds it: the others wait
    /// out a claim rather than take a decision it is about to change.
    func settled(generation: UInt32) -> Word {
        while true {
            let now = current
            if now.generation != generation || now.phase != .claimed { return now }
            sched_yield()
        }
    }

    /// Claims the call of `generation` in a phase `accept` takes, waiting
    /// out another claim; the phase it was in, or nil when the call is not
    /// in such a phase (or is not this generation's).
    func claim(generation: UInt32, when accept: (Phase) -> Bool) -> Phase? {
        while true {
            let now = settled(generation: generation)
            guard now.generation == generation, accept(now.phase) else { return nil }
            if move(from: now, to: Word(generation: generation, phase: .claimed)) { return now.phase }
        }
    }
}

/// Every lane's slot, by number, so a token finds its slot without a lock.
/// A slot is never freed, only handed to the next lane, so a token a
/// plug-in kept (or made up) always finds either nothing or a live object,
/// whose generation refuses it.
final class SynchronousSlotTable: @unchecked Sendable {
    // @unchecked: the chunks are written once, under `spare`'s lock, and
    // published through atomics.
    static let chunkSize = 1024
    static let chunkCount = 512

    /// Each chunk's address (0: not made yet); a chunk holds `chunkSize`
    /// slot addresses (0: none yet).
    private let chunks: UnsafeMutablePointer<Atomic<UInt>>
    private struct Spare {
        var free: [UInt32] = []
        var count: UInt32 = 0
    }
    private let spare = Lock(Spare())
    /// The generation a new slot starts at: 0, but for a test of the wrap.
    private let firstGeneration: UInt32

    init(firstGeneration: UInt32) {
        self.firstGeneration = firstGeneration
        chunks = .allocate(capacity: Self.chunkCount)
        for index in 0..<Self.chunkCount { (chunks + index).initialize(to: Atomic(0)) }
    }

    deinit {
        for index in 0..<Self.chunkCount {
            let chunk = chunks[index].load(ordering: .acquiring)
            guard chunk != 0, let base = UnsafeMutablePointer<Atomic<UInt>>(bitPattern: chunk) else { continue }
            for slot in 0..<Self.chunkSize {
                let address = base[slot].load(ordering: .acquiring)
                if address != 0, let pointer = UnsafeRawPointer(bitPattern: address) {
                    Unmanaged<SynchronousSlot>.fromOpaque(pointer).release()
                }
            }
            base.deinitialize(count: Self.chunkSize)
            base.deallocate()
        }
        chunks.deinitialize(count: Self.chunkCount)
        chunks.deallocate()
    }

    /// The slot numbered `number`, if there is one; no lock, no retain.
    func withSlot<R>(_ number: UInt32, _ body: (SynchronousSlot) -> R) -> R? {
        let chunkIndex = Int(number) / Self.chunkSize
        guard chunkIndex < Self.chunkCount else { return nil }
        let chunk = chunks[chunkIndex].load(ordering: .acquiring)
        guard chunk != 0, let base = UnsafeMutablePointer<Atomic<UInt>>(bitPattern: chunk) else { return nil }
        let address = base[Int(number) % Self.chunkSize].load(ordering: .acquiring)
        guard address != 0, let pointer = UnsafeRawPointer(bitPattern: address) else { return nil }
        return Unmanaged<SynchronousSlot>.fromOpaque(pointer)._withUnsafeGuaranteedRef(body)
    }

    /// A slot for a new lane; nil when all are in use (the lane then sends
    /// everything down the general path).
    func take() -> SynchronousSlot? {
        spare.withLock { spare -> SynchronousSlot? in
            if let number = spare.free.popLast() { return withSlot(number) { $0 } }
            guard spare.count < UInt32(Self.chunkSize * Self.chunkCount) else { return nil }
            let number = spare.count
            let chunkIndex = Int(number) / Self.chunkSize
            if chunks[chunkIndex].load(ordering: .acquiring) == 0 {
                let base = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: Self.chunkSize)
                for index in 0..<Self.chunkSize { (base + index).initialize(to: Atomic(0)) }
                chunks[chunkIndex].store(UInt(bitPattern: base), ordering: .releasing)
            }
            let slot = SynchronousSlot(number: number, generation: firstGeneration)
            let base = UnsafeMutablePointer<Atomic<UInt>>(bitPattern: chunks[chunkIndex].load(ordering: .acquiring))!
            base[Int(number) % Self.chunkSize].store(UInt(bitPattern: Unmanaged.passRetained(slot).toOpaque()),
                                                     ordering: .releasing)
            spare.count += 1
            return slot
        }
    }

    /// Gives a lane's slot back for the next lane. A slot whose generation
    /// is spent is kept out of use: its next token would repeat one handed
    /// out 2^32 calls ago, which a plug-in may still hold.
    func giveBack(_ slot: SynchronousSlot) {
        guard !slot.isSpent else { return }
        spare.withLock { $0.free.append(slot.number) }
    }
}
