#if Queue  // the package's Queue trait: swift build --traits Queue
/// Reads a queue's outcomes as a stream that never skips one and never
/// gives one twice (`xcallback outcomes --follow`), although outcomes are
/// numbered when their transaction starts and become visible when it
/// commits, in another order.
///
/// Each pass reads every committed outcome past a safe cursor. The cursor
/// only moves up to the snapshot's horizon (every transaction below it has
/// ended, so nothing below it can still appear); outcomes past the horizon
/// are given at once and remembered, so the next pass, which reads them
/// again, skips them.
public struct OutcomeReader {
    let client: QueueClient
    /// Everything at or below it has been given.
    public private(set) var cursor: OutcomeCursor
    /// Given outcomes past the cursor: position → recording transaction.
    private var givenPastCursor: [Int64: UInt64] = [:]
    let pageSize: Int

    public init(client: QueueClient, after cursor: OutcomeCursor = .start, pageSize: Int = 1_000) {
        self.client = client
        self.cursor = cursor
        self.pageSize = pageSize
    }

    /// One pass: the outcomes not given before, in pages to `body`.
    public mutating func pass(_ body: ([StoredOutcome]) throws -> Void) throws {
        var scan = cursor
        var safe = cursor
        var safeStill = true
        while true {
            let (page, horizon) = try client.outcomes(after: scan, limit: pageSize)
            var fresh: [StoredOutcome] = []
            for outcome in page {
                let transaction = UInt64(outcome.cursor.transaction) ?? 0
                // The safe cursor follows the read while every outcome so far
                // lies below the horizon.
                if safeStill && transaction < horizon {
                    safe = outcome.cursor
                } else {
                    safeStill = false
                }
                if givenPastCursor[outcome.cursor.position] != nil { continue }
                fresh.append(outcome)
                if transaction >= horizon || !safeStill { givenPastCursor[outcome.cursor.position] = transaction }
            }
            if !fresh.isEmpty { try body(fresh) }
            // Everything up to `safe` is given: a pass cut short by a lost
            // connection resumes after it, repeating nothing.
            cursor = safe
            guard page.count == pageSize, let last = page.last else { break }
            scan = last.cursor
        }
        cursor = safe
        let floor = UInt64(cursor.transaction) ?? 0
        givenPastCursor = givenPastCursor.filter { position, transaction in
            transaction > floor || (transaction == floor && position > cursor.position)
        }
    }
}
#endif
