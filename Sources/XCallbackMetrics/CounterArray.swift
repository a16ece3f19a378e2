import Synchronization

/// A fixed number of counters, each one atomic, allocated once: a label
/// set known in advance (outcomes by error code, histogram buckets) counts
/// with one relaxed add and no lock, no allocation, no lookup.
public final class CounterArray: Sendable {
    public let count: Int
    // Atomics need a stable address; this memory is never moved, and only
    // ever touched through `Atomic`'s own operations.
    @usableFromInline nonisolated(unsafe) let counters: UnsafeMutablePointer<Atomic<UInt64>>

    public init(count: Int) {
        precondition(count > 0)
        self.count = count
        // Aligned to a cache line, so no other object shares the first one.
        counters = UnsafeMutableRawPointer.allocate(byteCount: count * MemoryLayout<Atomic<UInt64>>.stride, alignment: 64)
            .bindMemory(to: Atomic<UInt64>.self, capacity: count)
        for index in 0..<count { (counters + index).initialize(to: Atomic(0)) }
    }

    deinit {
        counters.deinitialize(count: count)
        counters.deallocate()
    }

    @inlinable
    public func add(_ amount: UInt64 = 1, at index: Int) {
        precondition(index >= 0 && index < count)
        counters[index].wrappingAdd(amount, ordering: .relaxed)
    }

    public func value(at index: Int) -> UInt64 {
        precondition(index >= 0 && index < count)
        return counters[index].load(ordering: .relaxed)
    }
}

/// One atomic counter (or gauge), for a metric with no labels of its own.
/// Padded to a cache line of its own: counters written by different
/// threads (an input's lines by its reader, its records by whichever
/// thread ends a request) must not share one, or every add would pull the
/// line from the other core.
public final class Counter: Sendable {
    /// The count itself, for an owner that also paces itself on it and
    /// needs orderings of its own (`StreamCounts`).
    public let value = Atomic<UInt64>(0)
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)

    public init() {}

    @inlinable
    public func add(_ amount: UInt64 = 1) { value.wrappingAdd(amount, ordering: .relaxed) }

    public func subtract(_ amount: UInt64 = 1) { value.wrappingSubtract(amount, ordering: .relaxed) }

    public func set(_ newValue: UInt64) { value.store(newValue, ordering: .relaxed) }

    public var current: UInt64 { value.load(ordering: .relaxed) }
}
