import CXCallback
import Testing
@testable import XCallbackBridge
import XCallbackURL
@testable import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Each frame kind has one codec: the general path's shape and a lane's
/// shape of the same request or answer make the same bytes, and read back
/// the same, through the one reader.
@Suite("One codec per frame kind")
struct FrameKindCodecTests {
    private let fields = RequestFields(
        url: "calc://x-callback-url/add?lhs=1&rhs=2&text=%E6%97%A5", scheme: "calc", source: "Launch Center",
        parameters: [QueryParameter("lhs", "1"), QueryParameter("rhs", "2"), QueryParameter("text", "日")],
        arguments: [], id: 41, attempt: 3)

    private func payload(_ frame: [UInt8]) -> [UInt8] { Array(frame[5...]) }

    @Test("a request frame from fields and from a lane's parsed line is the same bytes")
    func requestShapesAgree() throws {
        let lines = [
            "calc://x-callback-url/add?lhs=1&rhs=2&text=%E6%97%A5&x-source=Launch%20Center",
            "CaLc://x-callback-url/add?x-success=a%3A%2F%2Fb&lhs=%20&x-error=e:&rhs=&empty",
            "calc://x-callback-url/add",
        ]
        for text in lines {
            let url = try RequestURL(parsing: text)
            let fields = RequestFields(url: text, scheme: url.scheme, source: url.source,
                                       parameters: url.parameters.items, arguments: [], id: 41, attempt: 1)
            var general: [UInt8] = []
            RequestFrame.write(id: 7, handler: 2, fields, into: &general)
            var lane: [UInt8] = [9, 9]
            var parsed = RequestLine()
            let written = Array(text.utf8).withUnsafeBufferPointer { line in
                parsed.parse(line)
                    && RequestFrame.writeLine(id: 7, handler: 2, line: line, parsed: &parsed, requestID: { 41 }, into: &lane)
            }
            #expect(written)
            #expect(Array(lane.dropFirst(2)) == general, "\(text)")
            #expect(general[4] == WorkerFrame.requestKind)
            let url2 = Array(lane.dropFirst(2)).withUnsafeBytes { RequestFrame.url(ofFrame: $0).map { Array($0) } }
            #expect(url2 == Array(text.utf8))
        }
    }

    @Test("on 20,000 generated lines, a lane's frame is the general path's frame whenever the lane writes one")
    func generatedLinesAgree() throws {
        var random = SeededGenerator(seed: 0x5EED_F4A3)
        let pieces = ["a", "Z", "0", "-", "%20", "%41", "%e6%97%A5", "%", "%4", "%zz", "%00", "%FF", "%C3%A9",
                      "é", "日", "+", "=", "&", ";", "/", ":", "x-", "%2F", "%3D%26", ""]
        let names = ["lhs", "rhs", "text", "x-source", "x-success", "x-error", "x-cancel", "X-Success", "n", "empty", ""]
        var written = 0
        for _ in 0..<20_000 {
            func word(_ count: Int) -> String { (0..<count).map { _ in pieces.randomElement(using: &random)! }.joined() }
            var line = ["calc", "CaLc", "x1+b.c", "calc"].randomElement(using: &random)! + "://"
                + ["x-callback-url", "X-Callback-URL", ""].randomElement(using: &random)! + "/add"
            let count = Int.random(in: 0...5, using: &random)
            for index in 0..<count {
                line += index == 0 ? "?" : "&"
                line += names.randomElement(using: &random)!
                if Bool.random(using: &random) { line += "=" + word(Int.random(in: 0...4, using: &random)) }
            }
            let bytes = Array(line.utf8)
            var parsed = RequestLine()
            var lane: [UInt8] = []
            let laneWrote = bytes.withUnsafeBufferPointer { buffer in
                parsed.parse(buffer)
                    && RequestFrame.writeLine(id: 3, handler: 1, line: buffer, parsed: &parsed, requestID: { 77 }, into: &lane)
            }
            guard laneWrote else {
                #expect(lane.isEmpty, "\(line)")
                continue
            }
            // The lane sends a line only once its callbacks decoded too
            // (`FastLane.hasDeliverableCallbacks`); they are not in the frame.
            var scratch = [UInt8](repeating: 0, count: bytes.count + 8)
            let callbacksDecode = [parsed.success, parsed.error, parsed.cancel].allSatisfy { span in
                guard let span else { return true }
                return bytes.withUnsafeBufferPointer { buffer in
                    scratch.withUnsafeMutableBufferPointer { RequestLine.decodeValue(span, in: buffer, into: $0.baseAddress!) != nil }
                }
            }
            guard callbacksDecode else { continue }
            written += 1
            guard let url = try? RequestURL(parsing: line) else {
                Issue.record("the lane wrote a frame for a line RequestURL refuses: \(line)")
                continue
            }
            let fields = RequestFields(url: line, scheme: url.scheme, source: url.source, parameters: url.parameters.items,
                                       arguments: [], id: 77, attempt: 1)
            var general: [UInt8] = []
            RequestFrame.write(id: 3, handler: 1, fields, into: &general)
            #expect(lane == general, "\(line)")
            var builder = RequestFieldsBuilder()
            let read = Array(lane.dropFirst(WorkerFrame.headerSize)).withUnsafeBytes { RequestFrame.read($0, into: &builder) }
            #expect(read?.id == 3 && builder.fields == fields, "\(line)")
        }
        // Enough of them are lines the lane takes for the check to mean something.
        #expect(written > 2_000, "the lane wrote \(written) frames")
    }

    @Test("a line whose value does not decode writes no frame and takes no request id")
    func undecodableLineWritesNothing() {
        let text = "calc://x-callback-url/add?lhs=%E6%97&rhs=1"
        var output: [UInt8] = [1, 2, 3]
        var asked = false
        var parsed = RequestLine()
        let written = Array(text.utf8).withUnsafeBufferPointer { line in
            parsed.parse(line)
                && RequestFrame.writeLine(id: 7, handler: 2, line: line, parsed: &parsed,
                                          requestID: { asked = true; return 1 }, into: &output)
        }
        #expect(!written && !asked)
        #expect(output == [1, 2, 3])
    }

    @Test("a request frame read into fields and into a native request agree")
    func requestReadersAgree() {
        var bytes: [UInt8] = []
        RequestFrame.write(id: 9, handler: 1, fields, into: &bytes)
        let body = payload(bytes)
        var builder = RequestFieldsBuilder()
        let native = NativeRequest()
        var filler = NativeRequestFiller(native, route: "r")
        let (asFields, asNative) = body.withUnsafeBytes {
            (RequestFrame.read($0, into: &builder), RequestFrame.read($0, into: &filler))
        }
        #expect(asFields?.id == 9 && asFields?.handler == 1)
        #expect(asNative?.id == 9 && asNative?.handler == 1)
        #expect(builder.fields == fields)
        #expect(String(cString: native.url) == fields.url)
        #expect(String(cString: native.source!) == "Launch Center")
        #expect(native.parameterCount == 3 && native.id == 41 && native.attempt == 3)
        #expect(body.withUnsafeBytes { RequestFrame.handler(of: $0) } == 1)
    }

    @Test("a parameter count past the bytes left is malformed, whatever its size")
    func hostileCountsAreRefused() {
        for count: UInt32 in [1, 2, 1_000, .max] {
            var body: [UInt8] = Array(repeating: 0, count: 8)  // the id
            body.append(ResultFrame.Code.success.rawValue)
            withUnsafeBytes(of: count.littleEndian) { body.append(contentsOf: $0) }
            var parameters: [ByteParameter] = []
            #expect(body.withUnsafeBytes { ResultFrame.read($0, into: &parameters) } == nil, "count \(count)")
            #expect(body.withUnsafeBytes { WorkerFrame.decode(kind: WorkerFrame.resultKind, payload: $0) } == nil)
        }
    }

    @Test("result codes are the wire's numbers")
    func resultCodesAreFixed() {
        #expect(ResultFrame.Code.success.rawValue == 0)
        #expect(ResultFrame.Code.error.rawValue == 1)
        #expect(ResultFrame.Code.cancel.rawValue == 2)
        #expect(ResultFrame.Code.declined.rawValue == 3)
        for kind in OutcomeKind.allCases { #expect(ResultFrame.Code(kind).outcomeKind == kind) }
        #expect(ResultFrame.Code.declined.outcomeKind == nil)
    }

    @Test("an answer captured in a lane and the same answer as a result are the same bytes")
    func resultShapesAgree() {
        let capture = ReplyCapture()
        let names = [strdup("sum"), strdup("text")]
        let values = [strdup("3"), strdup("日本")]
        defer { (names + values).forEach { free($0) } }
        let params = [xcallback_param(name: names[0], value: values[0]), xcallback_param(name: names[1], value: values[1])]
        #expect(params.withUnsafeBufferPointer { capture.captureSuccess($0.baseAddress, count: 2) })
        var lane: [UInt8] = []
        ResultFrame.write(id: 5, capture: capture, into: &lane)
        var general: [UInt8] = []
        let outcome = Outcome(kind: .success, parameters: [QueryParameter("sum", "3"), QueryParameter("text", "日本")])
        ResultFrame.write(id: 5, .outcome(outcome), into: &general)
        #expect(lane == general)

        capture.captureCancel()
        lane.removeAll()
        general.removeAll()
        ResultFrame.write(id: 6, capture: capture, into: &lane)
        ResultFrame.write(id: 6, .outcome(.cancel), into: &general)
        #expect(lane == general)
    }

    @Test("the host reads an answer in place only when it can write its record from the bytes")
    func answersInPlace() {
        func frame(_ result: HandlerResult) -> [UInt8] {
            var bytes: [UInt8] = []
            ResultFrame.write(id: 11, result, into: &bytes)
            return payload(bytes)
        }
        var parameters: [ByteParameter] = []
        let success = frame(.outcome(Outcome(kind: .success, parameters: [QueryParameter("a", "b")])))
        let inPlace = success.withUnsafeBytes { ResultFrame.answerInPlace($0, into: &parameters) }
        #expect(inPlace?.id == 11 && inPlace?.kind == .success && parameters.count == 1)
        #expect(frame(.outcome(.cancel)).withUnsafeBytes { ResultFrame.answerInPlace($0, into: &parameters) }?.kind == .cancel)
        let error = frame(.outcome(.error(code: "E", message: "m", domain: "d")))
        #expect(error.withUnsafeBytes { ResultFrame.answerInPlace($0, into: &parameters) } == nil)
        #expect(error.withUnsafeBytes { ResultFrame.decode($0) }?.result == .outcome(.error(code: "E", message: "m", domain: "d")))
        let declined = frame(.declined)
        #expect(declined.withUnsafeBytes { ResultFrame.answerInPlace($0, into: &parameters) } == nil)
        #expect(declined.withUnsafeBytes { ResultFrame.decode($0) }?.result == .declined)

        // Not UTF-8: repaired by decode, never written from the bytes.
        var invalid = frame(.outcome(Outcome(kind: .success, parameters: [QueryParameter("a", "b")])))
        invalid[invalid.count - 1] = 0xFF
        #expect(invalid.withUnsafeBytes { ResultFrame.answerInPlace($0, into: &parameters) } == nil)
        let repaired = invalid.withUnsafeBytes { ResultFrame.decode($0) }?.result
        #expect(repaired == .outcome(Outcome(kind: .success, parameters: [QueryParameter("a", "\u{FFFD}")])))
    }

    @Test("a decline that carries parameters is malformed")
    func declineWithParametersIsMalformed() {
        var bytes: [UInt8] = []
        ResultFrame.write(id: 1, .outcome(Outcome(kind: .success, parameters: [QueryParameter("a", "b")])), into: &bytes)
        var body = payload(bytes)
        body[8] = ResultFrame.Code.declined.rawValue
        var parameters: [ByteParameter] = []
        #expect(body.withUnsafeBytes { ResultFrame.read($0, into: &parameters) } == nil)
    }
}
