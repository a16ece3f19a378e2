/// Where things are in the page a worker shares with the host
/// (`WorkerProgress`): three words, then the outbox.
public enum WorkerPageLayout {
    /// A worker flushes its outbox at `BufferedWriter.threshold`; room for
    /// a few times that, so a batch seldom waits for a write.
    public static let size = 1 << 20
    public static let header = 64
    /// The last request the worker began.
    public static let lastBegunOffset = 0
    /// Bytes of whole frames in the outbox.
    public static let pendingOffset = 8
    /// Non-zero: it died of a fatal signal near its memory ceiling.
    public static let memoryOffset = 16
    public static let outboxCapacity = size - header
}

/// A dead worker's shared page, decoded: the one place the host reads what
/// a worker wrote there. A worker is hostile, and so is its page: every
/// word is checked against what the host itself knows, and no value in it
/// can make the host trap, allocate without bound, or believe more than
/// its own records allow.
public struct WorkerPageReport: Equatable {
    /// The last request the worker says it began, never past the last one
    /// the host sent it (a request the host never sent cannot be begun).
    public var lastBegun: UInt64
    /// The whole frames its outbox held, up to the first that does not
    /// decode. Answers in them count only for requests still in flight.
    public var unsentFrames: [WorkerFrame]
    /// The worker's word that it died at its memory ceiling: a claim, which
    /// `WorkerDeath` believes only with the kernel's count of its memory.
    public var claimsMemoryCeiling: Bool

    /// Decodes `page` (the header words, then as many outbox bytes as the
    /// page had, at most); `lastSent` is the highest request id the host
    /// sent this worker.
    public init(decoding page: UnsafeRawBufferPointer, lastSent: UInt64) {
        func word(_ offset: Int) -> UInt64 {
            page.count >= offset + 8 ? UInt64(littleEndian: page.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) : 0
        }
        lastBegun = min(word(WorkerPageLayout.lastBegunOffset), lastSent)
        claimsMemoryCeiling = word(WorkerPageLayout.memoryOffset) != 0
        let outbox = page.count > WorkerPageLayout.header
            ? UnsafeRawBufferPointer(rebasing: page[WorkerPageLayout.header...]) : UnsafeRawBufferPointer(start: nil, count: 0)
        // The pending word says how much of the outbox is frames; never
        // more than the bytes there are.
        let pending = word(WorkerPageLayout.pendingOffset)
        let count = pending > UInt64(outbox.count) ? outbox.count : Int(pending)
        unsentFrames = FrameReader.frames(in: UnsafeRawBufferPointer(rebasing: outbox[..<count]))
    }
}
