/// The candidates for one request, best first (see `RouteTable` for the order).
///
/// Lazy: each `next()` resumes the trie walk where the previous one stopped, so a host
/// that takes the first candidate pays for one, and asks for the next only when a
/// handler declines.
///
///     var candidates = table.matches(scheme: "a", host: "b", path: ["c"])
///     while let candidate = candidates.next() { ... }
public struct RouteMatches<Value: Sendable>: Sequence, IteratorProtocol, Sendable {
    private enum Step: Sendable {
        case literalChild, argumentChild, endings, wildcards
    }

    /// One level of the depth-first walk.
    private struct Frame: Sendable {
        var node: Int
        var depth: Int
        var step: Step
        var index = 0
    }

    private let table: RouteTable<Value>
    private let host: String
    /// `host` as host literals are stored (ASCII-lowercased).
    private let hostKey: String
    private let path: [String]
    private var stack: [Frame] = []
    /// Routes already offered that could be offered again through another alternative.
    private var offered: [Int] = []

    init(table: RouteTable<Value>, root: Int?, host: String, path: [String]) {
        self.table = table
        self.host = host
        self.hostKey = RouteTrie.hostKey(host)
        self.path = path
        if let root {
            // The walk is never deeper than the longest route; don't trust a huge request.
            stack.reserveCapacity(Swift.min(path.count + 2, 16))
            stack.append(Frame(node: root, depth: 0, step: .literalChild))
        }
    }

    public mutating func next() -> RouteMatch<Value>? {
        let length = path.count + 1
        while !stack.isEmpty {
            let top = stack.count - 1
            let frame = stack[top]
            switch frame.step {
            case .literalChild:
                if frame.depth == length {
                    // The request is used up: only routes ending here, or a wildcard matching nothing.
                    stack[top].step = .endings
                    continue
                }
                stack[top].step = .argumentChild
                let literal = frame.depth == 0 ? hostKey : segment(frame.depth)
                if let child = table.trie.nodes[frame.node].literals[ByteExactText(literal)] {
                    stack.append(Frame(node: child, depth: frame.depth + 1, step: .literalChild))
                }
            case .argumentChild:
                stack[top].step = .wildcards
                if let child = table.trie.nodes[frame.node].argument, !segment(frame.depth).isEmpty {
                    stack.append(Frame(node: child, depth: frame.depth + 1, step: .literalChild))
                }
            case .endings, .wildcards:
                let list = frame.step == .endings
                    ? table.trie.nodes[frame.node].endings : table.trie.nodes[frame.node].wildcards
                if frame.index < list.count {
                    stack[top].index += 1
                    if let match = offer(list[frame.index]) { return match }
                } else if frame.step == .endings {
                    stack[top].step = .wildcards
                    stack[top].index = 0
                } else {
                    stack.removeLast()
                }
            }
        }
        return nil
    }

    private func segment(_ depth: Int) -> String {
        depth == 0 ? host : path[depth - 1]
    }

    /// The match for `ending`, unless its route was already offered through another alternative.
    private mutating func offer(_ ending: RouteTrie.Ending) -> RouteMatch<Value>? {
        if table.hasSeveralAlternatives(ending.route) {
            if offered.contains(ending.route) { return nil }
            offered.append(ending.route)
        }
        return table.match(ending, host: host, path: path)
    }
}
