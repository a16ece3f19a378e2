import XCallbackSystem

/// Numbers plug-ins for the inputs' shares (`InputShares`): each plug-in
/// name gets its own slot, the next free one, kept for the host's life (a
/// reload or a new worker finds the same one). An exact key, not a hash:
/// two plug-ins never share a count, so one that stalls is never hidden by
/// another that answers.
///
/// Looked up once per route and per worker, never per request.
enum ShareSlots {
    /// Slots there are; a plug-in named past them (more than 4,096 names in
    /// one host's life) is not counted (`slot(of:)` is -1).
    static let capacity = InputShares.pageCount * InputShares.pageSize

    private static let numbers = Lock<[String: Int]>([:])

    /// The slot of the plug-in named `name`, or -1 when every slot is taken.
    static func slot(of name: String) -> Int {
        numbers.withLock { numbers in
            if let slot = numbers[name] { return slot }
            guard numbers.count < capacity else { return -1 }
            let slot = numbers.count
            numbers[name] = slot
            return slot
        }
    }
}
