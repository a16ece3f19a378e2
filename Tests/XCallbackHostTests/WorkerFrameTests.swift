import Testing
@testable import XCallbackBridge
@testable import XCallbackHost
import XCallbackURL
@testable import XCallbackWire

/// The request frame carries everything a worker hands its plug-in, the
/// request's id and attempt included (protocol 3).
@Suite("Worker frames")
struct WorkerFrameTests {
    /// Encodes `frame` and decodes it back from its kind byte and payload.
    private func roundTrip(_ frame: WorkerFrame) -> WorkerFrame? {
        var bytes: [UInt8] = []
        frame.encode(into: &bytes)
        let length = bytes[0..<4].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        #expect(length == bytes.count - 5)
        return bytes[5...].withUnsafeBytes { WorkerFrame.decode(kind: bytes[4], payload: $0) }
    }

    @Test("a request frame keeps the request's id and attempt")
    func requestKeepsIDAndAttempt() {
        let fields = RequestFields(url: "q://x-callback-url/a?n=1", scheme: "q", source: "Tests",
                                   parameters: [QueryParameter("n", "1")], arguments: [QueryParameter("*", "x")],
                                   id: 0xDEAD_BEEF_0000_0007, attempt: 4)
        let frame = WorkerFrame.request(id: 9, handler: 2, fields: fields)
        #expect(roundTrip(frame) == frame)
        #expect(RequestFields(url: "", scheme: "", source: nil, parameters: [], arguments: []).attempt == 1)
    }

    @Test("a request frame without the attempt (protocol 2) is malformed, not misread")
    func requestWithoutAttemptIsRefused() {
        let fields = RequestFields(url: "q://x-callback-url/a", scheme: "q", source: nil, parameters: [], arguments: [], id: 7)
        var bytes: [UInt8] = []
        WorkerFrame.request(id: 1, handler: 0, fields: fields).encode(into: &bytes)
        let short = Array(bytes[5..<(bytes.count - 4)])
        #expect(short.withUnsafeBytes { WorkerFrame.decode(kind: bytes[4], payload: $0) } == nil)
    }
}
