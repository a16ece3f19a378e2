// Finding delimiter bytes eight at a time (SWAR: SIMD within a register).
// Request lines are mostly runs of ordinary bytes between a few delimiters,
// so skipping a word per step is where the parser saves its time.
//
// Every search takes the range to search, [start, end), and how far memory may
// be read, `limit` (the end of the whole line): a short range near the start of
// a line is still searched with one word load instead of byte by byte.

enum ByteSearch {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    @inline(__always)
    static func broadcast(_ byte: UInt8) -> UInt64 { UInt64(byte) &* ones }

    /// Nonzero when `word` has a zero byte; its lowest set bit is the high bit of the
    /// first zero byte (a borrow can only mark bytes above a real zero).
    @inline(__always)
    static func firstZeroBytes(_ word: UInt64) -> UInt64 {
        (word &- ones) & ~word & highs
    }

    /// Whether `word` has a byte a record line may not hold as it is: a C0
    /// control (below 0x20: a borrow marks it, and none marks a byte that is
    /// not below) or DEL.
    @inline(__always)
    static func hasLineBreaking(_ word: UInt64) -> Bool {
        ((word &- broadcast(0x20)) & ~word & highs) | firstZeroBytes(word ^ broadcast(0x7F)) != 0
    }

    /// Eight bytes from `base + index`, the first in the lowest byte whatever the platform.
    @inline(__always)
    static func load(_ base: UnsafePointer<UInt8>, _ index: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
    }

    /// The index of the first `target` in `base[start..<end]`, or `end`; reads no further than `limit`.
    @inline(__always)
    static func firstIndex(
        of target: UInt8, in base: UnsafePointer<UInt8>, from start: Int, to end: Int, limit: Int
    ) -> Int {
        let pattern = broadcast(target)
        var index = start
        while index < end {
            guard index &+ 8 <= limit else {
                while index < end && base[index] != target { index &+= 1 }
                return index
            }
            let hits = firstZeroBytes(load(base, index) ^ pattern)
            if hits != 0 { return min(index &+ hits.trailingZeroBitCount &>> 3, end) }
            index &+= 8
        }
        return end
    }

    /// The index of the first `first` or `second` in `base[start..<end]`, or `end`; reads no further than `limit`.
    @inline(__always)
    static func firstIndex(
        of first: UInt8, or second: UInt8, in base: UnsafePointer<UInt8>, from start: Int, to end: Int, limit: Int
    ) -> Int {
        let pattern1 = broadcast(first)
        let pattern2 = broadcast(second)
        var index = start
        while index < end {
            guard index &+ 8 <= limit else {
                while index < end && base[index] != first && base[index] != second { index &+= 1 }
                return index
            }
            let word = load(base, index)
            let hits = firstZeroBytes(word ^ pattern1) | firstZeroBytes(word ^ pattern2)
            if hits != 0 { return min(index &+ hits.trailingZeroBitCount &>> 3, end) }
            index &+= 8
        }
        return end
    }

    /// How many bytes of `word` (as returned by `load`) come before the first `target`: 8 when there is none.
    @inline(__always)
    static func bytesBefore(_ target: UInt8, inWord word: UInt64) -> Int {
        let hits = firstZeroBytes(word ^ broadcast(target))
        return hits == 0 ? 8 : hits.trailingZeroBitCount &>> 3
    }
}
