#if Queue  // the package's Queue trait: swift build --traits Queue
/// The requests whose records this host wrote lately, so it never writes
/// one twice. The database records an outcome once, but a host can be told
/// twice that it recorded one: the same request may sit in two of its
/// batches (taken up again after a lost claim), and after a lost connection
/// the second batch asks which of its outcomes had committed, and finds it.
/// The chaos test saw 256 records written twice in 50,000. Bounded: the
/// oldest ids are forgotten first.
struct RecentlyWritten {
    private var ids = Set<Int64>()
    private var order: [Int64] = []
    private var next = 0
    let capacity: Int

    init(capacity: Int = 1 << 16) {
        self.capacity = capacity
        order.reserveCapacity(capacity)
    }

    /// Whether `id` was written lately.
    func contains(_ id: Int64) -> Bool { ids.contains(id) }

    /// Whether `id` is new; remembers it.
    mutating func insert(_ id: Int64) -> Bool {
        guard ids.insert(id).inserted else { return false }
        if order.count < capacity {
            order.append(id)
        } else {
            ids.remove(order[next])
            order[next] = id
            next = (next + 1) % capacity
        }
        return true
    }
}
#endif
