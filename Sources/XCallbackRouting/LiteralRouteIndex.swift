/// The routes a request reaches through literal segments alone, keyed by
/// their bytes: the host's fast path looks a request up without building a
/// String, an array or a dictionary key.
///
/// A key is the lowercased scheme, the lowercased host, and each path
/// segment, each followed by a NUL (no part of a request holds one). For
/// such a path the trie's first match is the first route registered at the
/// end of the literal chain, so the index holds that route and a lookup
/// finds exactly what ``RouteTable/firstMatch(scheme:host:path:)`` would.
/// A request it does not hold may still match an argument or a wildcard:
/// the caller then asks the table.
public struct LiteralRouteIndex: Sendable {
    private struct Entry: Sendable {
        var hash: UInt64
        var keyStart: Int
        var keyCount: Int
        var route: Int
    }

    private var keys: [UInt8] = []
    private var entries: [Entry] = []
    /// Open addressing over `entries`; -1 marks an empty slot.
    private var slots: [Int] = [-1]
    private var mask = 0

    /// An empty index.
    public init() {}

    init(_ pairs: [(key: [UInt8], route: Int)]) {
        var capacity = 4
        while capacity < pairs.count * 2 { capacity *= 2 }
        slots = Array(repeating: -1, count: capacity)
        mask = capacity - 1
        for pair in pairs {
            let hash = pair.key.withUnsafeBufferPointer { Self.hash($0) }
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = entries.count
            entries.append(Entry(hash: hash, keyStart: keys.count, keyCount: pair.key.count, route: pair.route))
            keys.append(contentsOf: pair.key)
        }
    }

    /// How many routes it holds.
    public var count: Int { entries.count }

    /// The route (an index into ``RouteTable/routes``) whose literal chain is `key`.
    @inline(__always)
    public func route(forKey key: UnsafeBufferPointer<UInt8>) -> Int? {
        if entries.isEmpty { return nil }
        let hash = Self.hash(key)
        var slot = Int(truncatingIfNeeded: hash) & mask
        return keys.withUnsafeBufferPointer { stored -> Int? in
            while true {
                let index = slots[slot]
                if index < 0 { return nil }
                let entry = entries[index]
                if entry.hash == hash && entry.keyCount == key.count,
                   let storedBase = stored.baseAddress, let keyBase = key.baseAddress,
                   memcmp(storedBase + entry.keyStart, keyBase, key.count) == 0 {
                    return entry.route
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// FNV-1a: keys are short, and this needs no state beyond one word.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0100_0000_01b3 }
        return hash
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension RouteTrie {
    /// Every literal chain that ends in a route: its key (see
    /// ``LiteralRouteIndex``) and the route a lookup of it finds first.
    func literalChains() -> [(key: [UInt8], route: Int)] {
        var chains: [(key: [UInt8], route: Int)] = []
        func walk(_ node: Int, _ key: [UInt8]) {
            if let first = nodes[node].endings.first { chains.append((key, first.route)) }
            for (literal, child) in nodes[node].literals {
                walk(child, key + Array(literal.text.utf8) + [0])
            }
        }
        for (scheme, root) in roots {
            // A bare scheme route (`scheme://`) ends at the root's empty host.
            walk(root, Array(scheme.utf8) + [0])
        }
        return chains
    }
}

extension RouteTable {
    /// The index of the routes reached through literal segments alone.
    public func literalIndex() -> LiteralRouteIndex {
        LiteralRouteIndex(trie.literalChains())
    }
}
