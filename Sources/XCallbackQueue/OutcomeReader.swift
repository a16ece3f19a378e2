#if Queue  // the package's Queue trait: swift build --traits Queue
/// Reads a queue's outcomes as a stream that never skips one and never
/// gives one twice (`xcallback outcomes --follow`), although outcomes are
/// numbered when their transaction starts and become visible when it
/// commits, in another order.
///
/// It gives outcomes in the order of their cursor (recording transaction,
/// then position), and only up to the read's horizon: every transaction
/// below it that could write the queue has ended, so no outcome can still
/// appear before one it gave. What it has given is therefore exactly
/// everything up to its cursor, which is the last outcome it gave: a
/// reader started after that outcome (`outcomes --after ID`), or this one
/// reading on after a lost connection, neither skips nor repeats one. An
/// outcome waits for the transactions of the queue's database that began
/// before its own to end (a few milliseconds with hosts recording; as long
/// as a transaction left open there lasts).
public struct OutcomeReader {
    let client: QueueClient
    /// Everything at or below it has been given, nothing above it.
    public private(set) var cursor: OutcomeCursor
    let pageSize: Int

    public init(client: QueueClient, after cursor: OutcomeCursor = .start, pageSize: Int = 1_000) {
        self.client = client
        self.cursor = cursor
        self.pageSize = pageSize
    }

    /// One pass: the outcomes not given before that are safe to give, in
    /// pages to `body`. The cursor moves past a page once `body` returns,
    /// so a pass cut short (a lost connection, a failed write) gives
    /// nothing twice when it is tried again.
    public mutating func pass(_ body: ([StoredOutcome]) throws -> Void) throws {
        while true {
            let (page, horizon, full) = try client.outcomes(after: cursor, limit: pageSize)
            let safe = page.prefix { (UInt64($0.cursor.transaction) ?? .max) < horizon }
            guard let last = safe.last else { return }
            try body(Array(safe))
            cursor = last.cursor
            // A page cut at the horizon: the rest waits for the next pass.
            guard full && safe.count == page.count else { return }
        }
    }

    /// Every outcome committed after the cursor, the horizon aside (a
    /// listing, `outcomes` without --follow), in pages to `body`.
    public mutating func all(_ body: ([StoredOutcome]) throws -> Void) throws {
        while true {
            let (page, _, full) = try client.outcomes(after: cursor, limit: pageSize)
            guard let last = page.last else { return }
            try body(page)
            cursor = last.cursor
            guard full else { return }
        }
    }
}
#endif
