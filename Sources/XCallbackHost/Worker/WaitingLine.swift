import XCallbackBridge

/// Requests for a plug-in that wait for its worker (none ready yet, or one
/// not reading its requests), first in line first, with the memory they
/// hold, which bounds how much may wait (`WorkerEndpoint.maxWaitingBytes`).
struct WaitingLine {
    private(set) var items: [WorkerRequest] = []
    /// The memory the waiting requests hold, by `cost(of:)`: the cap is
    /// one of memory, not of request text.
    private(set) var bytes = 0

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }

    /// Joins at the end.
    mutating func append(_ item: WorkerRequest) {
        items.append(item)
        bytes += Self.cost(of: item)
    }

    /// Goes first, in order: requests that were already in line, or that a
    /// worker never began.
    mutating func prepend(_ first: some Collection<WorkerRequest>) {
        items.insert(contentsOf: first, at: 0)
        bytes += first.reduce(0) { $0 + Self.cost(of: $1) }
    }

    /// Everything in line, which is then empty.
    mutating func takeAll() -> [WorkerRequest] {
        defer {
            items.removeAll()
            bytes = 0
        }
        return items
    }

    /// The memory one waiting request keeps, overhead included: its URL is
    /// held about `copiesOfLine` times over (the request's text, its
    /// decoded parameters, the parsed URL its pending request keeps, the
    /// `jsonl` input, and what the allocator rounds each up to), and the
    /// objects around it (the pending request, its call, its timer entry,
    /// a parameter's strings and array slot) about `overhead` bytes and
    /// `parameterOverhead` a parameter. Measured, with a margin: see
    /// docs/reliability.md, "Memory caps".
    static func cost(of item: WorkerRequest) -> Int {
        copiesOfLine * item.request.url.utf8.count + overhead + parameterOverhead * item.request.parameters.count
    }

    static let copiesOfLine = 4
    static let overhead = 2048
    static let parameterOverhead = 96
}
