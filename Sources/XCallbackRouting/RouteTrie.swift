/// The routes of a table arranged for lookup: one trie per scheme, walked one request
/// segment per level, so the cost of a lookup depends on the request's length, not on
/// how many routes there are.
///
/// Nodes live in one array and refer to each other by index, which keeps the table a
/// plain value (copy-on-write, `Sendable`) without reference-counted node objects.
struct RouteTrie: Sendable {
    /// Where one alternative of one route ends.
    struct Ending: Sendable, Equatable {
        /// Index of the route in the table's registration-ordered list.
        var route: Int
        /// Index into the route pattern's `alternatives`.
        var alternative: Int
    }

    struct Node: Sendable {
        /// Literal children, keyed byte for byte (see `ByteExactText`).
        var literals: [ByteExactText: Int] = [:]
        /// The child reached by an `:argument` segment; all argument names share it, which
        /// is what makes routes differing only in names the same shape.
        var argument: Int?
        /// Alternatives ending exactly at this node, in registration order.
        var endings: [Ending] = []
        /// Alternatives whose `*` follows this node, in registration order.
        var wildcards: [Ending] = []
    }

    private(set) var roots: [String: Int] = [:]
    private(set) var nodes: [Node] = []

    /// Adds one alternative and returns the routes that already ended at the same place,
    /// that is, the routes with this shape. A route whose own earlier alternative has the
    /// same shape (as in `a://b(/:x)(/:y)`) is kept once, with its first alternative.
    mutating func insert(_ segments: [RouteSegment], scheme: String, ending: Ending) -> [Int] {
        var node: Int
        if let root = roots[scheme] {
            node = root
        } else {
            node = newNode()
            roots[scheme] = node
        }
        for segment in segments {
            switch segment {
            case .literal(let text):
                let key = ByteExactText(text)
                if let child = nodes[node].literals[key] {
                    node = child
                } else {
                    let child = newNode()
                    nodes[node].literals[key] = child
                    node = child
                }
            case .argument:
                if let child = nodes[node].argument {
                    node = child
                } else {
                    let child = newNode()
                    nodes[node].argument = child
                    node = child
                }
            case .wildcard:
                // The parser guarantees the wildcard is last.
                return Self.append(ending, to: &nodes[node].wildcards)
            }
        }
        return Self.append(ending, to: &nodes[node].endings)
    }

    /// The routes that end where `segments` would, without changing the trie.
    func routes(withShapeOf segments: [RouteSegment], scheme: String) -> [Int] {
        guard var node = roots[scheme] else { return [] }
        for segment in segments {
            switch segment {
            case .literal(let text):
                guard let child = nodes[node].literals[ByteExactText(text)] else { return [] }
                node = child
            case .argument:
                guard let child = nodes[node].argument else { return [] }
                node = child
            case .wildcard:
                return nodes[node].wildcards.map(\.route)
            }
        }
        return nodes[node].endings.map(\.route)
    }

    private static func append(_ ending: Ending, to list: inout [Ending]) -> [Int] {
        if list.contains(where: { $0.route == ending.route }) { return [] }
        let sameShape = list.map(\.route)
        list.append(ending)
        return sameShape
    }

    private mutating func newNode() -> Int {
        nodes.append(Node())
        return nodes.count - 1
    }

    /// The best ending for a request, found depth-first in precedence order without
    /// allocating: at each depth the literal child, then the argument child, then the
    /// wildcards of the current node; once the request is used up, the exact endings
    /// before the wildcards (which then match nothing).
    func firstEnding(root: Int, host: String, path: [String]) -> Ending? {
        firstEnding(node: root, depth: 0, host: host, hostKey: Self.hostKey(host), path: path)
    }

    /// The host as its literals are stored: ASCII-lowercased (RFC 3986 3.2.2:
    /// the host is case-insensitive). Hosts are nearly always lowercase
    /// already: check before copying.
    static func hostKey(_ host: String) -> String {
        for byte in host.utf8 where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") {
            return String(decoding: host.utf8.map { $0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        return host
    }

    private func firstEnding(node: Int, depth: Int, host: String, hostKey: String, path: [String]) -> Ending? {
        if depth == path.count + 1 {
            if let ending = nodes[node].endings.first { return ending }
        } else {
            let segment = depth == 0 ? host : path[depth - 1]
            if let child = nodes[node].literals[ByteExactText(depth == 0 ? hostKey : segment)],
               let ending = firstEnding(node: child, depth: depth + 1, host: host, hostKey: hostKey, path: path) {
                return ending
            }
            if !segment.isEmpty, let child = nodes[node].argument,
               let ending = firstEnding(node: child, depth: depth + 1, host: host, hostKey: hostKey, path: path) {
                return ending
            }
        }
        return nodes[node].wildcards.first
    }
}
