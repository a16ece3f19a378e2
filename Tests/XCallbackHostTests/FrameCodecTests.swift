import Testing
@testable import XCallbackBridge
import XCallbackURL
@testable import XCallbackWire

/// The frame codec (`WorkerFrame`, `RequestFrame`, `ResultFrame`, the
/// wire's readers): every kind of frame reads back as it was written, and
/// no payload, however short, long, hostile or random, traps the decoder:
/// what does not decode exactly is nil, never a frame.
@Suite("Frame codec")
struct FrameCodecTests {
    /// One or more frames of every kind, with the shapes each kind allows.
    static let samples: [WorkerFrame] = [
        .hello(version: WorkerFrame.protocolVersion, taken: []),
        .hello(version: 0, taken: [QueryParameter("calc://x-callback-url/add", "Calculator"),
                                   QueryParameter("", ""), QueryParameter("日本://*", "名前")]),
        .ready(version: .max, info: .init(name: "Calculator", version: "1.2.3", summary: "adds", abiMajor: 1, abiMinor: 0),
               routes: []),
        .ready(version: 3, info: .init(name: "", version: "", summary: "", abiMajor: .max, abiMinor: .max),
               routes: ["calc://x-callback-url/add", "calc://x-callback-url/:op", "calc://*"]),
        .loadFailed(message: ""),
        .loadFailed(message: "dlopen failed: \u{1F4A5} undefined symbol"),
        .request(id: 1, handler: 0, fields: RequestFields(url: "q://x-callback-url/a", scheme: "q", source: nil,
                                                          parameters: [], arguments: [])),
        .request(id: .max, handler: .max, fields: RequestFields(
            url: "calc://x-callback-url/add?lhs=1&rhs=2&text=%E6%97%A5", scheme: "calc", source: "Launch Center",
            parameters: [QueryParameter("lhs", "1"), QueryParameter("rhs", "2"), QueryParameter("text", "日")],
            arguments: [QueryParameter("op", "add"), QueryParameter("*", "")], id: .max, attempt: .max)),
        // An empty source is a source: it is not read back as none.
        .request(id: 7, handler: 1, fields: RequestFields(url: "", scheme: "", source: "", parameters: [QueryParameter("", "")],
                                                          arguments: [], id: 0, attempt: 0)),
        .result(id: 0, result: .declined),
        .result(id: 42, result: .outcome(Outcome(kind: .success, parameters: []))),
        .result(id: 43, result: .outcome(Outcome(kind: .success, parameters: [QueryParameter("sum", "3"), QueryParameter("sum", "4")]))),
        .result(id: 44, result: .outcome(.error(code: "Boom", message: "it broke", domain: "tests"))),
        .result(id: .max, result: .outcome(.cancel)),
        .returned(id: 0),
        .returned(id: .max),
        .shutdown,
        .sync,
        // Appended: tests name the samples above by index.
        .ready(version: 4, info: .init(name: "bound", version: "1", summary: "", abiMajor: 1, abiMinor: 2),
               routes: ["m://x-callback-url/sqrt", "m://x-callback-url/add"],
               signatures: [QueryParameter("m://x-callback-url/sqrt", "double sqrt(double)")],
               refused: [QueryParameter("calc://x-callback-url/add", "calculator"), QueryParameter("", "")]),
    ]

    static func encoded(_ frame: WorkerFrame) -> [UInt8] {
        var bytes: [UInt8] = []
        frame.encode(into: &bytes)
        return bytes
    }

    /// The kind byte and the payload of one encoded frame.
    static func split(_ frame: WorkerFrame) -> (kind: UInt8, payload: [UInt8]) {
        let bytes = encoded(frame)
        return (bytes[4], Array(bytes[5...]))
    }

    static func decode(_ kind: UInt8, _ payload: [UInt8]) -> WorkerFrame? {
        payload.withUnsafeBytes { WorkerFrame.decode(kind: kind, payload: $0) }
    }

    static func expectedKind(_ frame: WorkerFrame) -> WorkerFrame.Kind {
        switch frame {
        case .hello: .hello
        case .ready: .ready
        case .loadFailed: .loadFailed
        case .request: .request
        case .result: .result
        case .returned: .returned
        case .shutdown: .shutdown
        case .sync: .sync
        }
    }

    /// A decoded frame must be exactly what its own encoding decodes to:
    /// whatever the decoder accepts, it accepts as a frame it can write.
    static func expectStable(_ frame: WorkerFrame, _ comment: Comment? = nil) {
        let (kind, payload) = split(frame)
        #expect(decode(kind, payload) == frame, comment)
    }

    @Test("every frame kind reads back as written, under a header of its length and kind", arguments: samples)
    func roundTrip(_ frame: WorkerFrame) {
        let bytes = Self.encoded(frame)
        #expect(bytes.count >= 5)
        let length = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        #expect(Int(length) == bytes.count - 5)
        #expect(bytes[4] == Self.expectedKind(frame).rawValue)
        #expect(Self.decode(bytes[4], Array(bytes[5...])) == frame)
        // Encoding appends: what was in the buffer before stays.
        var appended: [UInt8] = [0xAA, 0xBB]
        frame.encode(into: &appended)
        #expect(appended == [0xAA, 0xBB] + bytes)
    }

    @Test("the kinds are the wire's numbers")
    func kindNumbersAreFixed() {
        let kinds: [(WorkerFrame.Kind, UInt8)] = [
            (.hello, 1), (.ready, 2), (.loadFailed, 3), (.request, 4), (.result, 5), (.returned, 6), (.shutdown, 7),
            (.sync, 8),
        ]
        for (kind, number) in kinds { #expect(kind.rawValue == number) }
        #expect(WorkerFrame.requestKind == 4 && WorkerFrame.resultKind == 5 && WorkerFrame.returnedKind == 6)
        #expect(WorkerFrame.Kind(rawValue: 0) == nil && WorkerFrame.Kind(rawValue: 9) == nil)
        #expect(WorkerFrame.maxPayload == 16 * 1024 * 1024)
    }

    @Test("a kind the wire does not define is refused, whatever the payload")
    func unknownKindsAreRefused() {
        let payloads = [[]] + Self.samples.map { Self.split($0).payload }
        for kind in UInt8.min...UInt8.max where WorkerFrame.Kind(rawValue: kind) == nil {
            for payload in payloads {
                #expect(Self.decode(kind, payload) == nil, "kind \(kind)")
            }
        }
    }

    @Test("every strict prefix of a payload, and the payload with a byte more, is refused", arguments: samples)
    func truncatedAndTrailingAreRefused(_ frame: WorkerFrame) {
        let (kind, payload) = Self.split(frame)
        for count in 0..<payload.count {
            #expect(Self.decode(kind, Array(payload[..<count])) == nil, "\(count) of \(payload.count) bytes")
        }
        for extra: UInt8 in [0, 1, 0xFF] {
            #expect(Self.decode(kind, payload + [extra]) == nil, "trailing \(extra)")
        }
    }

    @Test("a length or count near UInt32.max or Int32.max in any field never traps, and is refused past the payload",
          arguments: samples)
    func hostileLengthsAreRefused(_ frame: WorkerFrame) {
        let (kind, payload) = Self.split(frame)
        guard payload.count >= 4 else { return }
        let hostile: [UInt32] = [.max, .max - 1, .max - 4, 0x8000_0000, 0x7FFF_FFFF, 0x7FFF_FFFB,
                                 UInt32(payload.count), UInt32(payload.count) + 1]
        // Every 4-byte window of the payload, whether a length is there or
        // not: each string length, pair count and route count gets them all.
        for offset in 0...(payload.count - 4) {
            for value in hostile {
                var mutated = payload
                for index in 0..<4 { mutated[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))) }
                guard let decoded = Self.decode(kind, mutated) else { continue }
                // Accepted only if the field was not a length at all (an id,
                // a version): then it must be a frame that writes back.
                Self.expectStable(decoded, "offset \(offset), value \(value)")
            }
        }
    }

    @Test("a string length past the payload's end is refused for every kind that has strings")
    func stringLengthsPastTheEnd() {
        func payload(_ build: (inout WireWriter) -> Void) -> [UInt8] {
            var writer = WireWriter(output: [])
            build(&writer)
            return writer.output
        }
        for length: UInt32 in [1, 2, 1_000, 0x7FFF_FFFF, 0x8000_0000, .max - 1, .max] {
            // loadFailed: its message claims more bytes than follow.
            #expect(Self.decode(3, payload { $0.u32(length) }) == nil)
            // hello: one taken pair (bytes enough for its count) whose name is too long.
            #expect(Self.decode(1, payload { $0.u32(3); $0.u32(1); $0.u32(length); $0.u32(0) }) == nil)
            // ready: a route count far past what the bytes can hold.
            #expect(Self.decode(2, payload {
                $0.u32(3); $0.string("n"); $0.string("v"); $0.string("s"); $0.u16(1); $0.u16(0); $0.u32(length)
            }) == nil)
            // ready: a signature count past what the bytes can hold.
            #expect(Self.decode(2, payload {
                $0.u32(4); $0.string("n"); $0.string("v"); $0.string("s"); $0.u16(1); $0.u16(0); $0.u32(0); $0.u32(length)
            }) == nil)
            // request: a url length past the end.
            #expect(Self.decode(4, payload { $0.u64(1); $0.u32(0); $0.u32(length) }) == nil)
            // result: a parameter name past the end.
            #expect(Self.decode(5, payload { $0.u64(1); $0.u8(0); $0.u32(1); $0.u32(length); $0.u32(0) }) == nil)
        }
        // A length that fits is a frame.
        #expect(Self.decode(3, payload { $0.u32(1); $0.output += [0x41] }) == .loadFailed(message: "A"))
    }

    @Test("a ready frame with more signatures than routes is refused")
    func moreSignaturesThanRoutes() {
        var writer = WireWriter(output: [])
        writer.u32(WorkerFrame.protocolVersion)
        writer.string("n"); writer.string("v"); writer.string("s"); writer.u16(1); writer.u16(2)
        writer.u32(1); writer.string("a://x-callback-url/b")
        let base = writer.output
        writer.pairs([QueryParameter("a://x-callback-url/b", "int b(void)")])
        writer.pairs([])
        #expect(Self.decode(2, writer.output) != nil)
        writer.output = base
        writer.pairs([QueryParameter("a://x-callback-url/b", "int b(void)"), QueryParameter("c", "int c(void)")])
        writer.pairs([])
        #expect(Self.decode(2, writer.output) == nil)
    }

    @Test("a result code the wire does not define is refused")
    func unknownResultCodes() {
        let (kind, success) = Self.split(.result(id: 9, result: .outcome(Outcome(kind: .success, parameters: []))))
        var payload = success
        for code in UInt8(4)...UInt8.max {
            payload[8] = code
            #expect(Self.decode(kind, payload) == nil, "code \(code)")
            var parameters: [ByteParameter] = []
            #expect(payload.withUnsafeBytes { ResultFrame.answerInPlace($0, into: &parameters) } == nil)
        }
    }

    @Test("the in-place readers refuse short payloads and agree with the decoder")
    func inPlaceReaders() {
        let returned = Self.split(.returned(id: 0x0102_0304_0506_0708)).payload
        #expect(returned.withUnsafeBytes { WorkerFrame.returnedID($0) } == 0x0102_0304_0506_0708)
        for count in 0..<returned.count {
            #expect(returned[..<count].withUnsafeBytes { WorkerFrame.returnedID($0) } == nil)
        }
        #expect((returned + [0]).withUnsafeBytes { WorkerFrame.returnedID($0) } == nil)

        let request = Self.split(Self.samples[7]).payload
        #expect(request.withUnsafeBytes { RequestFrame.handler(of: $0) } == .max)
        for count in 0..<12 {
            #expect(request[..<count].withUnsafeBytes { RequestFrame.handler(of: $0) } == nil, "\(count) bytes")
        }
    }

    @Test("text that is not UTF-8 decodes repaired, never trapping")
    func invalidUTF8IsRepaired() {
        var writer = WireWriter(output: [])
        writer.u32(3)
        writer.output += [0x41, 0xFF, 0xC3]
        #expect(Self.decode(WorkerFrame.Kind.loadFailed.rawValue, writer.output) == .loadFailed(message: "A\u{FFFD}\u{FFFD}"))
    }

    @Test("random payloads of every kind never trap; what decodes writes back the same")
    func randomPayloads() {
        var generator = SeededGenerator(seed: 0x5EED_F4A3)
        var decoded = 0
        for _ in 0..<3_000 {
            let kind = UInt8.random(in: 0...9, using: &generator)
            let count = Int.random(in: 0...48, using: &generator)
            // Small bytes often: they make plausible lengths and counts.
            let payload = (0..<count).map { _ in
                Bool.random(using: &generator) ? UInt8.random(in: 0...3, using: &generator) : UInt8.random(in: 0...255, using: &generator)
            }
            guard let frame = Self.decode(kind, payload) else { continue }
            decoded += 1
            #expect(frame == Self.decode(Self.split(frame).kind, Self.split(frame).payload), "kind \(kind), \(payload)")
        }
        // Not a bound on the decoder: a check that the inputs reach past the header checks.
        #expect(decoded > 0)
    }

    @Test("a frame with one byte changed never traps; what decodes writes back the same", arguments: samples)
    func bitFlips(_ frame: WorkerFrame) {
        let (kind, payload) = Self.split(frame)
        for index in payload.indices {
            for bit in 0..<8 {
                var mutated = payload
                mutated[index] ^= 1 << bit
                if let decoded = Self.decode(kind, mutated) { Self.expectStable(decoded, "byte \(index) bit \(bit)") }
            }
        }
    }
}
