import XCallbackBridge

/// Requests for a plug-in that wait for its worker (none ready yet, or one
/// not reading its requests), first in line first, with the request text
/// they hold, which bounds how much may wait (`WorkerEndpoint.maxWaiting`).
struct WaitingLine {
    private(set) var items: [WorkerRequest] = []
    /// The URL bytes the waiting requests hold.
    private(set) var bytes = 0

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }

    /// Joins at the end.
    mutating func append(_ item: WorkerRequest) {
        items.append(item)
        bytes += item.request.url.utf8.count
    }

    /// Goes first, in order: requests that were already in line, or that a
    /// worker never began.
    mutating func prepend(_ first: some Collection<WorkerRequest>) {
        items.insert(contentsOf: first, at: 0)
        bytes += first.reduce(0) { $0 + $1.request.url.utf8.count }
    }

    /// Everything in line, which is then empty.
    mutating func takeAll() -> [WorkerRequest] {
        defer {
            items.removeAll()
            bytes = 0
        }
        return items
    }
}
