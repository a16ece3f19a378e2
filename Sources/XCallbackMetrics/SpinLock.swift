import Synchronization

/// A lock for what is rare (a plug-in loaded, a sandbox violation, a
/// scrape), never for what every request does. Built on an atomic so
/// ThreadSanitizer sees it (it cannot see `Mutex` waiting on a futex).
final class SpinLock<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched while `locked` is held.
    private let locked = Atomic<Bool>(false)
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        while locked.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged == false {
            while locked.load(ordering: .relaxed) {}
        }
        defer { locked.store(false, ordering: .releasing) }
        return body(&value)
    }
}
