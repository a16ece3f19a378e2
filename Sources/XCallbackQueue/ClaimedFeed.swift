#if Queue  // the package's Queue trait: swift build --traits Queue
import DequeModule
import Foundation
import XCallbackHost

/// The requests a host has claimed and not yet started: the host's
/// dispatch threads take them one at a time (`RequestFeed`). Closing it
/// hands back what never started, for the consumer to release.
final class ClaimedFeed: RequestFeed, @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private let condition = NSCondition()
    private var waiting = Deque<ClaimedRequest>()
    private var closed = false

    /// Adds claimed requests; returns them instead when the feed is closed.
    func push(_ requests: [ClaimedRequest]) -> [ClaimedRequest] {
        condition.lock()
        defer { condition.unlock() }
        if closed { return requests }
        waiting.append(contentsOf: requests)
        condition.broadcast()
        return []
    }

    func next() -> FedRequest? {
        condition.lock()
        defer { condition.unlock() }
        while waiting.isEmpty && !closed { condition.wait() }
        guard !closed, let request = waiting.popFirst() else { return nil }
        return FedRequest(line: Array(request.line.utf8), id: UInt64(request.id), attempt: UInt32(request.attempt))
    }

    /// Ends the feed; returns the requests that never started.
    func close() -> [ClaimedRequest] {
        condition.lock()
        defer { condition.unlock() }
        closed = true
        let left = Array(waiting)
        waiting.removeAll()
        condition.broadcast()
        return left
    }
}
#endif
