import Testing
@testable import XCallbackBridge
@testable import XCallbackHost
import XCallbackURL

/// `WaitingLine`, the requests that wait for a plug-in's worker: first in
/// line first, requests a worker never began go back to the front in their
/// order, and the URL bytes it holds (what bounds it) always match what is
/// in it.
@Suite("Waiting line")
struct WaitingLineTests {
    static func item(_ handler: Int, url: String) -> WorkerRequest {
        WorkerRequest(handler: handler, request: RequestFields(url: url, scheme: "t", source: nil, parameters: [], arguments: []),
                      call: HandlerCall { _ in })
    }

    static func handlers(_ line: WaitingLine) -> [Int] { line.items.map(\.handler) }

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
        #expect(line.bytes == 5 + 10 + 0)
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
        #expect(line.bytes == 9 + 7 + 7)
        // A slice of what was taken, as the endpoint puts back the unsent rest.
        let taken = line.takeAll()
        line.append(Self.item(20, url: "t://new"))
        line.prepend(taken[1...])
        #expect(Self.handlers(line) == [2, 10, 20])
        #expect(line.bytes == 7 + 9 + 7)
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
            #expect(line.bytes == line.items.reduce(0) { $0 + $1.request.url.utf8.count }, "step \(step)")
            #expect(line.count == line.items.count)
        }
    }
}
