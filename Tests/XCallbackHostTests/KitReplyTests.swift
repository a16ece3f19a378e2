import Testing
@testable import XCallbackPluginKit

/// The Swift kit's `Reply`: a success keeps one parameter inline and more
/// in an array, and the two forms are the same answer.
@Suite("Swift kit replies")
struct KitReplyTests {
    private func parameters(of reply: Reply) -> [QueryParameter] {
        guard case .success(let parameters) = reply.kind else { return [] }
        return parameters.withUnsafeBufferPointer { Array($0) }
    }

    @Test("one parameter, written either way, is the same reply")
    func oneParameter() {
        let literal = Reply.success(["result": "6.2"])
        #expect(literal == .success([QueryParameter("result", "6.2")]))
        #expect(literal != .success(["result": "6.3"]))
        #expect(parameters(of: literal) == [QueryParameter("result", "6.2")])
    }

    @Test("several parameters keep their order; none is a success too")
    func severalParameters() {
        let literal = Reply.success(["b": "2", "a": "1"])
        #expect(parameters(of: literal) == [QueryParameter("b", "2"), QueryParameter("a", "1")])
        #expect(literal == .success([QueryParameter("b", "2"), QueryParameter("a", "1")]))
        #expect(literal != .success(["a": "1", "b": "2"]))
        #expect(literal != .success(["b": "2"]))
        #expect(parameters(of: .success()) == [])
        #expect(Reply.success() == .success([]))
        #expect(Reply.success() != .cancel)
    }
}
