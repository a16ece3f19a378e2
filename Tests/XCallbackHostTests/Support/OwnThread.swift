import Dispatch
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs `body` on a thread of its own and awaits its result without holding
/// one of Swift Testing's cooperative threads: `body` may block on a pipe, a
/// socket or a condition. Nil when it did not return within `seconds` (the
/// thread is then left to finish on its own; the caller should unblock it,
/// e.g. by shutting a socket down).
func awaitOwnThread<T: Sendable>(within seconds: Double = 60, _ body: @escaping @Sendable () -> T) async -> T? {
    await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        let once = ResumeOnce(continuation)
        Threads.detach { once.resume(body()) }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { once.resume(nil) }
    }
}

/// Resumes a continuation with the first value offered.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Lock<CheckedContinuation<T?, Never>?>

    init(_ continuation: CheckedContinuation<T?, Never>) {
        self.continuation = Lock(continuation)
    }

    func resume(_ value: T?) {
        continuation.withLock { pending in
            defer { pending = nil }
            return pending
        }?.resume(returning: value)
    }
}

/// Things that happen on other threads, in the order they happen, and a
/// bounded wait for them.
final class EventLog<Event: Sendable>: Sendable {
    private let events = ConditionLock<[Event]>([])

    init() {}

    func append(_ event: Event) {
        events.withLock { $0.append(event) }
        events.broadcast()
    }

    var all: [Event] { events.withLock { $0 } }
    var count: Int { events.withLock { $0.count } }

    /// Blocks until `isDone` holds for the events, or `seconds` pass; the
    /// events then. Call it from a thread of your own (`awaitOwnThread`).
    func wait(within seconds: Double = 30, until isDone: @escaping ([Event]) -> Bool) -> [Event] {
        let deadline = MonotonicClock.now + UInt64(seconds * 1e9)
        return events.wait(until: isDone, deadline: deadline) { $0 }
    }

    /// As `wait(within:until:)`, awaited without holding a cooperative thread.
    func waitAsync(within seconds: Double = 30, until isDone: @escaping @Sendable ([Event]) -> Bool) async -> [Event] {
        await awaitOwnThread(within: seconds + 5) { self.wait(within: seconds, until: isDone) } ?? all
    }
}

/// A seeded generator (SplitMix64): "random" inputs that are the same on
/// every run, so a failure can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
