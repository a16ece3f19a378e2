import Testing
@testable import XCallbackBridge
@testable import XCallbackHost
import XCallbackURL

/// `WaitingLine`, the requests that wait for a plug-in's worker: first in
/// line first, requests a worker never began go back to the front in their
/// order, and the memory it counts (what bounds it: `cost(of:)`, the URL
/// several times over and the objects around it) always matches what is in
/// it.
@Suite("Waiting line")
struct WaitingLineTests {
    static func item(_ handler: Int, url: String) -> WorkerRequest {
        WorkerRequest(handler: handler, request: RequestFields(url: url, scheme: "t", source: nil, parameters: [], arguments: []),
                      call: HandlerCall { _ in })
    }

    static func handlers(_ line: WaitingLine) -> [Int] { line.items.map(\.handler) }

    /// What a request with a URL of `urlBytes` and no parameters counts for.
    static func cost(_ urlBytes: Int) -> Int { WaitingLine.copiesOfLine * urlBytes + WaitingLine.overhead }

    @Test("a request counts for its URL several times over, its objects and its parameters, not its URL alone")
    func costIncludesOverhead() {
        let parameters = [QueryParameter(name: "a", value: "1"), QueryParameter(name: "b", value: "2")]
        let item = WorkerRequest(handler: 0, request: RequestFields(url: "t://x?a=1&b=2", scheme: "t", source: nil,
                                                                    parameters: parameters, arguments: []),
                                 call: HandlerCall { _ in })
        #expect(WaitingLine.cost(of: item) == 4 * 13 + 2048 + 2 * 96)
        var line = WaitingLine()
        line.append(item)
        #expect(line.bytes == WaitingLine.cost(of: item))
    }

    @Test("an empty line holds nothing")
    func empty() {
        var line = WaitingLine()
        #expect(line.isEmpty && line.count == 0 && line.bytes == 0)
        #expect(line.takeAll().isEmpty)
        line.prepend([])
        #expect(line.isEmpty && line.bytes == 0)
    }

    @Test("requests join at the end; takeAll gives them first in line first and empties the line")
    func appendAndTake() {
        var line = WaitingLine()
        line.append(Self.item(1, url: "t://a"))
        line.append(Self.item(2, url: "t://日本"))
        line.append(Self.item(3, url: ""))
        #expect(line.count == 3 && !line.isEmpty)
        // Bytes, not characters: 日本 is six.
        #expect(line.bytes == Self.cost(5) + Self.cost(10) + Self.cost(0))
        let taken = line.takeAll()
        #expect(taken.map(\.handler) == [1, 2, 3])
        #expect(taken.map(\.request.url) == ["t://a", "t://日本", ""])
        #expect(line.isEmpty && line.count == 0 && line.bytes == 0)
    }

    @Test("requests a worker never began go first, in their own order, ahead of those already waiting")
    func prependGoesFirst() {
        var line = WaitingLine()
        line.append(Self.item(10, url: "t://later"))
        line.prepend([Self.item(1, url: "t://one"), Self.item(2, url: "t://two")])
        #expect(Self.handlers(line) == [1, 2, 10])
        #expect(line.bytes == Self.cost(9) + Self.cost(7) + Self.cost(7))
        // A slice of what was taken, as the endpoint puts back the unsent rest.
        let taken = line.takeAll()
        line.append(Self.item(20, url: "t://new"))
        line.prepend(taken[1...])
        #expect(Self.handlers(line) == [2, 10, 20])
        #expect(line.bytes == Self.cost(7) + Self.cost(9) + Self.cost(7))
    }

    @Test("the byte count always matches the line's contents")
    func bytesMatchContents() {
        var generator = SeededGenerator(seed: 42)
        var line = WaitingLine()
        for step in 0..<500 {
            let url = String(repeating: "x", count: Int.random(in: 0...300, using: &generator))
            switch Int.random(in: 0..<10, using: &generator) {
            case 0: _ = line.takeAll()
            case 1...3: line.prepend([Self.item(step, url: url), Self.item(step, url: url + "é")])
            default: line.append(Self.item(step, url: url))
            }
            #expect(line.bytes == line.items.reduce(0) { $0 + WaitingLine.cost(of: $1) }, "step \(step)")
            #expect(line.count == line.items.count)
        }
    }
}
