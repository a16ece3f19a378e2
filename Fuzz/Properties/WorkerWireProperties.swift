import XCallbackBridge
import XCallbackURL
import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Properties of the host's decoder of what a worker writes (the `worker-wire` fuzz
/// target): a hostile worker sends random frames on its socket, leaves a random page
/// behind, then dies. The input is
///
///     lastSent (8 bytes, LE) | chunk bound (1) | interception (1) | stream length n (2, LE)
///     | stream (n) | page
///
/// (missing bytes are zeros). The stream reaches `FrameReader.next` through a pipe in
/// chunks of 1...bound bytes (0: all at once), with an interceptor that takes the
/// answers `ResultFrame.answerInPlace` and `WorkerFrame.returnedID` read, as a lane does (interception % 3: none,
/// consumed, handed over), and `FrameReader.frames(in:)` on prefixes; the page is three header words (24 bytes), zeros to the header's end, then
/// the outbox (under 24 bytes: the page as it is, a short one).
///
/// 1. Round trip. Every decoded frame `f` re-encodes to bytes that decode to `f` again
///    (`decode(encode(f)) == f`, byte for byte). The format has slack in two places,
///    so `encode(f)` equals the frame's own bytes exactly when none is used: a string
///    that is not UTF-8 decodes repaired (U+FFFD), and a request's source flag is any
///    non-zero byte (with flag 0 its source string is read and dropped). A declined
///    result carries no parameters, or is malformed. Whether a frame uses the slack
///    is judged by a reference reading of the grammar written here, which must also
///    accept exactly the payloads `decode` accepts.
/// 2. Decoding stops at the first malformed frame (an unknown kind, a payload that
///    does not decode, a length over `maxPayload`): `FrameReader.next` returns the
///    frames before it, then `.malformed`, never a frame past it; without one it
///    returns every whole frame, then `.end`. An interceptor sees each whole frame once,
///    in order, up to that one, and the frames it takes are not returned (`.intercepted`
///    instead, for one handed over). `frames(in:)` of any prefix is the frames
///    the reference finds in it.
/// 3. The page report: `lastBegun == min(word 0, lastSent)` (so ≤ lastSent),
///    `claimsMemoryCeiling` is word 2 ≠ 0, and `unsentFrames` are exactly
///    `frames(in:)` of the outbox's first min(pending, outbox size) bytes (pending is a
///    UInt64: past Int.max too).
/// 4. The lanes' in-place readers agree with the decoder on every whole frame's
///    payload: `ResultFrame.answerInPlace` gives an answer only when `decode` gives that `.result`
///    (id, kind, parameters byte for byte), and does give one for every success, or
///    cancel without parameters, whose text is UTF-8; `WorkerFrame.returnedID` gives exactly the
///    id of a decoded `.returned`; `RequestFrame.handler(of:)` the handler of a decoded `.request`;
///    `RequestFrame.read` into a `NativeRequestFiller` fills exactly when `decode` gives a `.request`, with its bytes.
/// 5. Nothing is allocated past O(input): a frame decodes to at most one string per 4
///    payload bytes, a stream to at most one frame per 5 bytes (and libFuzzer's malloc
///    limit traps a reservation for a count of 4 billion).
enum WorkerWireProperties {
    static func check(_ input: UnsafeBufferPointer<UInt8>) throws(PropertyViolation) {
        var cursor = 0
        func take(_ count: Int) -> ArraySlice<UInt8> {
            let end = min(input.count, cursor + count)
            defer { cursor = end }
            return ArraySlice(input[cursor..<end])
        }
        let lastSent = littleEndian(take(8))
        let chunkBound = Int(take(1).first ?? 0)
        let interception = Int(take(1).first ?? 0) % 3
        let streamLength = Int(littleEndian(take(2)))
        let stream = Array(take(streamLength))
        let pageBytes = Array(take(input.count))

        try checkStream(stream, chunkBound: chunkBound, interception: interception)
        try checkPage(pageBytes, lastSent: lastSent)
    }

    // MARK: the socket

    /// What `FrameReader.next` returns before it ends.
    private enum Event: Equatable {
        /// A frame, encoded (for byte-exact comparison).
        case frame([UInt8])
        case intercepted
    }

    private static func checkStream(_ stream: [UInt8], chunkBound: Int, interception: Int) throws(PropertyViolation) {
        let expected = try referenceFrames(stream[...])
        try require(expected.frames.count * 5 <= stream.count, "at most one frame per 5 bytes",
                    "\(expected.frames.count) frames in \(stream.count) bytes")
        for frame in expected.frames { try checkFrame(frame) }
        try checkPeeks(stream[...])

        // Chunk sizes from a small generator the input seeds.
        var chunks: [Range<Int>] = []
        var state = UInt32(chunkBound) &* 2_654_435_761 | 1
        var start = 0
        while start < stream.count {
            var size = stream.count - start
            if chunkBound > 0 {
                state ^= state << 13; state ^= state >> 17; state ^= state << 5
                size = min(size, 1 + Int(state % UInt32(chunkBound)))
            }
            chunks.append(start..<start + size)
            start += size
        }

        // Prefixes: what a reader holds after each chunk (a sample of them).
        let step = max(1, chunks.count / 16)
        for index in stride(from: 0, to: chunks.count, by: step) {
            let prefix = stream[..<chunks[index].upperBound]
            let found = prefix.withUnsafeBytes { FrameReader.frames(in: $0) }
            let reference = try referenceFrames(prefix)
            try require(sameFrames(found, reference.frames.map(\.decoded)),
                        "frames(in:) of a prefix is the reference's frames",
                        "\(prefix.count) bytes: \(found.count) frames, reference \(reference.frames.count)")
        }

        // The socket: each chunk written just before the reader would block.
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("pipe: \(errno)") }
        defer {
            close(ends[0])
            if ends[1] >= 0 { close(ends[1]) }
        }
        // As a lane does: take the answers the in-place readers read, as consumed
        // (interception 1) or handed over (2), and leave the rest to the decoder.
        var scratch: [ByteParameter] = []
        func takes(_ kind: UInt8, _ payload: UnsafeRawBufferPointer) -> Bool {
            switch kind {
            case WorkerFrame.resultKind: ResultFrame.answerInPlace(payload, into: &scratch) != nil
            case WorkerFrame.returnedKind: WorkerFrame.returnedID(payload) != nil
            default: false
            }
        }
        var seen: [[UInt8]] = []
        let intercept: FrameReader.Intercept = { kind, payload in
            seen.append([kind] + Array(payload))
            guard takes(kind, payload) else { return .decode }
            return interception == 1 ? .consumed : .handedOver
        }
        var expectedEvents: [Event] = []
        for frame in expected.frames {
            let taken = interception != 0 && frame.bytes.dropFirst(4).withUnsafeBytes {
                takes($0[0], UnsafeRawBufferPointer(rebasing: $0[1...]))
            }
            if !taken {
                expectedEvents.append(.frame(encoding(frame.decoded)))
            } else if interception == 2 {
                expectedEvents.append(.intercepted)
            }
        }
        var expectedSeen = expected.frames.map { Array($0.bytes.dropFirst(4)) }
        if let rejected = expected.rejected { expectedSeen.append(Array(rejected.dropFirst(4))) }

        let reader = FrameReader(descriptor: ends[0])
        var next = 0
        let feed = {
            guard next < chunks.count else {
                if ends[1] >= 0 { close(ends[1]); ends[1] = -1 }
                return
            }
            let chunk = chunks[next]
            next += 1
            let written = stream[chunk].withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
            precondition(written == chunk.count, "pipe write: \(written)")
        }
        var received: [Event] = []
        var ending: FrameReader.Next = .end
        reading: while true {
            switch reader.next(beforeBlocking: feed, intercept: interception == 0 ? nil : intercept) {
            case .frame(let frame):
                received.append(.frame(encoding(frame)))
                try require(received.count <= expected.frames.count, "no frame past the first malformed one",
                            "frame \(received.count) of \(expected.frames.count): \(frame)")
            case .intercepted:
                received.append(.intercepted)
            case let other:
                ending = other
                break reading
            }
        }
        try require(received == expectedEvents, "the socket reader returns the reference's frames",
                    "\(received.count) events, expected \(expectedEvents.count), chunk bound \(chunkBound), interception \(interception)")
        try require(interception == 0 || seen == expectedSeen, "the interceptor sees each whole frame once, in order",
                    "\(seen.count) frames seen, expected \(expectedSeen.count)")
        switch (ending, expected.malformed) {
        case (.malformed, true), (.end, false): break
        default:
            throw PropertyViolation(property: "the socket reader ends with .malformed exactly at a malformed frame",
                                    detail: "\(ending), reference malformed: \(expected.malformed)")
        }
    }

    // MARK: the page

    private static func checkPage(_ bytes: [UInt8], lastSent: UInt64) throws(PropertyViolation) {
        var page = bytes
        if bytes.count >= 24 {
            page = Array(bytes[..<24]) + [UInt8](repeating: 0, count: WorkerPageLayout.header - 24) + bytes[24...]
        }
        let report = page.withUnsafeBytes { WorkerPageReport(decoding: $0, lastSent: lastSent) }
        func word(_ offset: Int) -> UInt64 {
            page.count >= offset + 8 ? littleEndian(page[offset..<offset + 8]) : 0
        }
        try require(report.lastBegun <= lastSent, "lastBegun ≤ lastSent", "\(report.lastBegun) > \(lastSent)")
        try require(report.lastBegun == min(word(0), lastSent), "lastBegun is the page's word, bounded by lastSent",
                    "\(report.lastBegun), word \(word(0)), lastSent \(lastSent)")
        try require(report.claimsMemoryCeiling == (word(16) != 0), "the memory claim is word 2")
        let outbox = page.count > WorkerPageLayout.header ? page[WorkerPageLayout.header...] : []
        let pending = word(8)
        let count = pending >= UInt64(outbox.count) ? outbox.count : Int(pending)
        let frames = outbox.prefix(count).withUnsafeBytes { FrameReader.frames(in: $0) }
        try require(sameFrames(report.unsentFrames, frames), "unsentFrames are the frames of the pending outbox",
                    "\(report.unsentFrames.count) frames, expected \(frames.count) (pending \(pending), outbox \(outbox.count))")
        let reference = try referenceFrames(outbox.prefix(count))
        try require(sameFrames(report.unsentFrames, reference.frames.map(\.decoded)),
                    "unsentFrames are the reference's frames", "\(report.unsentFrames.count) vs \(reference.frames.count)")
        for frame in reference.frames { try checkFrame(frame) }
        try checkPeeks(outbox)
    }

    // MARK: one frame

    /// A whole frame the decoder accepted: its bytes (length, kind, payload), its
    /// decoding, and the reference's reading of it.
    struct Frame {
        var bytes: ArraySlice<UInt8>
        var decoded: WorkerFrame
        var shape: Shape
    }

    private static func checkFrame(_ frame: Frame) throws(PropertyViolation) {
        let payloadCount = frame.bytes.count - 5
        try require(frame.shape.strings.count * 4 <= payloadCount, "at most one string per 4 payload bytes",
                    "\(frame.shape.strings.count) strings in \(payloadCount) bytes")
        try require(stringCount(frame.decoded) <= payloadCount / 4, "decoded strings bounded by the payload",
                    "\(stringCount(frame.decoded)) strings in \(payloadCount) bytes")
        let encoded = encoding(frame.decoded)
        let again = encoded.withUnsafeBytes { bytes -> WorkerFrame? in
            guard bytes.count >= 5 else { return nil }
            return WorkerFrame.decode(kind: bytes[4], payload: UnsafeRawBufferPointer(rebasing: bytes[5...]))
        }
        try require(again.map { $0 == frame.decoded && encoding($0) == encoded } ?? false,
                    "an encoded frame decodes to itself", "\(frame.decoded) -> \(encoded)")
        let canonical = frame.shape.isCanonical(frame.bytes.dropFirst(5))
        try require(encoded.elementsEqual(frame.bytes) == canonical,
                    canonical ? "a frame without slack re-encodes to its own bytes" : "a frame with slack re-encodes otherwise",
                    "\(Array(frame.bytes)) -> \(encoded)")
    }

    /// The lanes' in-place readers on every whole frame's payload in `bytes`.
    private static func checkPeeks(_ bytes: ArraySlice<UInt8>) throws(PropertyViolation) {
        var offset = bytes.startIndex
        var parameters: [ByteParameter] = []
        let request = NativeRequest()
        while bytes.endIndex - offset >= 5 {
            let length = Int(littleEndian(bytes[offset..<offset + 4]))
            guard length <= WorkerFrame.maxPayload, bytes.endIndex - offset - 5 >= length else { return }
            let payload = bytes[(offset + 5)..<(offset + 5 + length)]
            offset += 5 + length
            let violation = payload.withUnsafeBytes { raw -> PropertyViolation? in
                do throws(PropertyViolation) {
                    try checkPayload(raw, payload: payload, parameters: &parameters, request: request)
                    return nil
                } catch {
                    return error
                }
            }
            if let violation { throw violation }
        }
    }

    /// The in-place readers against `decode` on one payload.
    private static func checkPayload(_ raw: UnsafeRawBufferPointer, payload: ArraySlice<UInt8>,
                                     parameters: inout [ByteParameter], request: NativeRequest) throws(PropertyViolation) {
        let asResult = WorkerFrame.decode(kind: WorkerFrame.resultKind, payload: raw)
        let answer = ResultFrame.answerInPlace(raw, into: &parameters)
        if let answer {
            guard case .result(let id, .outcome(let outcome)) = asResult else {
                throw PropertyViolation(property: "answerInPlace answers only a result", detail: "\(String(describing: asResult))")
            }
            try require(id == answer.id && outcome.kind == answer.kind && outcome.parameters.count == parameters.count,
                        "answerInPlace agrees with decode", "\(answer) vs \(id) \(outcome)")
            for (decoded, peeked) in zip(outcome.parameters, parameters) {
                try require(decoded.name.utf8.elementsEqual(raw[peeked.nameStart..<peeked.nameStart + peeked.nameCount])
                            && decoded.value.utf8.elementsEqual(raw[peeked.valueStart..<peeked.valueStart + peeked.valueCount]),
                            "answerInPlace's parameters are decode's", "\(decoded)")
            }
        } else if case .result(_, .outcome(let outcome)) = asResult,
                  outcome.kind == .success || (outcome.kind == .cancel && outcome.parameters.isEmpty),
                  reference(kind: WorkerFrame.resultKind, payload: payload)?.isCanonical(payload) == true {
            throw PropertyViolation(property: "answerInPlace answers every UTF-8 success or bare cancel",
                                    detail: "\(String(describing: asResult))")
        }

        let returned = WorkerFrame.returnedID(raw)
        let asReturned = WorkerFrame.decode(kind: WorkerFrame.returnedKind, payload: raw)
        try require(returned.map { WorkerFrame.returned(id: $0) } == asReturned, "returnedID agrees with decode",
                    "\(String(describing: returned)) vs \(String(describing: asReturned))")

        let asRequest = WorkerFrame.decode(kind: WorkerFrame.requestKind, payload: raw)
        var filler = NativeRequestFiller(request, route: "r")
        let filled = RequestFrame.read(raw, into: &filler)
        guard case .request(let id, let handler, let fields) = asRequest else {
            try require(filled == nil, "the filler fills only a request", "\(String(describing: filled))")
            return
        }
        try require(RequestFrame.handler(of: raw) == handler, "handler(of:) is the request's handler")
        try require(filled.map { $0.id == id && $0.handler == handler } ?? false, "the filler agrees with decode",
                    "\(String(describing: filled)) vs \(id), \(handler)")
        guard let shape = reference(kind: WorkerFrame.requestKind, payload: payload) else {
            throw PropertyViolation(property: "the reference accepts what decode accepts", detail: "request")
        }
        try checkFilled(request, shape: shape, fields: fields, payload: payload)
    }

    /// The request `RequestFrame.read` into a `NativeRequestFiller` made holds the payload's own bytes (up to a NUL where
    /// the C side reads a C string).
    private static func checkFilled(_ request: NativeRequest, shape: Shape, fields: RequestFields,
                                    payload: ArraySlice<UInt8>) throws(PropertyViolation) {
        func cString(_ pointer: UnsafePointer<CChar>?) -> [UInt8]? {
            pointer.map { Array(UnsafeRawBufferPointer(start: $0, count: strlen($0))) }
        }
        func expected(_ range: Range<Int>) -> [UInt8] { Array(payload[range].prefix { $0 != 0 }) }
        let strings = shape.strings  // url, scheme, source, then pairs
        try require(cString(request.url) == expected(strings[0]), "the filler's url is the payload's")
        try require(cString(request.scheme) == expected(strings[1]), "the filler's scheme is the payload's")
        try require(cString(request.source) == (shape.sourceFlag == 0 ? nil : expected(strings[2])),
                    "the filler's source is the payload's")
        try require(request.parameterCount == fields.parameters.count && request.argumentCount == fields.arguments.count,
                    "the filler's counts are decode's")
        for index in 0..<request.parameterCount {
            let name = strings[3 + 2 * index], value = strings[4 + 2 * index]
            let filled = request.parameterValue(at: index).map { Array(UnsafeRawBufferPointer(start: $0.0, count: $0.1)) }
            try require(cString(request.parameterName(at: index)) == expected(name) && filled == Array(payload[value]),
                        "the filler's parameter is the payload's", "parameter \(index)")
        }
        let first = 3 + 2 * request.parameterCount
        for index in 0..<request.argumentCount {
            try require(cString(request.argumentName(at: index)) == expected(strings[first + 2 * index])
                        && cString(request.argumentValue(at: index)) == expected(strings[first + 2 * index + 1]),
                        "the filler's argument is the payload's", "argument \(index)")
        }
        try require(request.id == fields.id && request.attempt == fields.attempt, "the filler's id and attempt are decode's")
    }

    // MARK: the reference

    /// The frames at the start of `bytes` as the reference reads them, up to the first
    /// that is incomplete or malformed (`malformed`: it stopped at a malformed one;
    /// `rejected`: that frame, when it was whole and did not decode).
    static func referenceFrames(_ bytes: ArraySlice<UInt8>) throws(PropertyViolation)
        -> (frames: [Frame], malformed: Bool, rejected: ArraySlice<UInt8>?) {
        var frames: [Frame] = []
        var offset = bytes.startIndex
        while bytes.endIndex - offset >= 5 {
            let length = Int(littleEndian(bytes[offset..<offset + 4]))
            guard length <= WorkerFrame.maxPayload else { return (frames, true, nil) }
            guard bytes.endIndex - offset - 5 >= length else { break }
            let frameBytes = bytes[offset..<(offset + 5 + length)]
            let payload = frameBytes.dropFirst(5)
            let kind = bytes[offset + 4]
            let decoded = payload.withUnsafeBytes { WorkerFrame.decode(kind: kind, payload: $0) }
            let shape = reference(kind: kind, payload: payload)
            // An independent reading must agree on what is well formed.
            try require((decoded == nil) == (shape == nil), "the reference accepts exactly what decode accepts",
                        "kind \(kind), \(Array(payload)) -> \(String(describing: decoded))")
            guard let decoded, let shape else { return (frames, true, frameBytes) }
            frames.append(Frame(bytes: frameBytes, decoded: decoded, shape: shape))
            offset += 5 + length
        }
        return (frames, false, nil)
    }

    /// What the reference learns of a well-formed payload.
    struct Shape {
        var kind: UInt8
        /// Every string's bytes, in order.
        var strings: [Range<Int>] = []
        var sourceFlag: UInt8 = 1

        /// Whether `encode` writes these very bytes back: UTF-8 strings, a source flag of
        /// 0 (empty source) or 1.
        func isCanonical(_ payload: ArraySlice<UInt8>) -> Bool {
            for range in strings where !String(decoding: payload[range], as: UTF8.self).utf8.elementsEqual(payload[range]) {
                return false
            }
            if kind == WorkerFrame.requestKind && !(sourceFlag == 1 || (sourceFlag == 0 && strings[2].isEmpty)) { return false }
            return true
        }
    }

    /// The payload's grammar, read without `WireReader`; nil when it is not well formed.
    static func reference(kind: UInt8, payload: ArraySlice<UInt8>) -> Shape? {
        var at = payload.startIndex
        var shape = Shape(kind: kind)
        func fixed(_ size: Int) -> UInt64? {
            guard payload.endIndex - at >= size else { return nil }
            defer { at += size }
            return littleEndian(payload[at..<at + size])
        }
        func string() -> Bool {
            guard let length = fixed(4), UInt64(payload.endIndex - at) >= length else { return false }
            shape.strings.append(at..<at + Int(length))
            at += Int(length)
            return true
        }
        func pairs() -> Int? {
            guard let count = fixed(4) else { return nil }
            for _ in 0..<count { guard string(), string() else { return nil } }
            return Int(count)
        }
        switch kind {
        case 1:  // hello
            guard fixed(4) != nil, pairs() != nil else { return nil }
        case 2:  // ready
            guard fixed(4) != nil, string(), string(), string(), fixed(2) != nil, fixed(2) != nil,
                  let count = fixed(4), count <= WorkerFrame.maxRoutes else { return nil }
            for _ in 0..<count { guard string() else { return nil } }
            guard let signatures = pairs(), signatures <= Int(count), let refused = pairs(),
                  refused <= WorkerFrame.maxRoutes else { return nil }
        case 3:  // loadFailed
            guard string() else { return nil }
        case 4:  // request
            guard fixed(8) != nil, fixed(4) != nil, string(), string(), let flag = fixed(1), string(),
                  pairs() != nil, pairs() != nil, fixed(8) != nil, fixed(4) != nil else { return nil }
            shape.sourceFlag = UInt8(flag)
        case 5:  // result
            guard fixed(8) != nil, let code = fixed(1), code <= 3, let count = pairs(), code != 3 || count == 0
            else { return nil }
        case 6:  // returned
            guard fixed(8) != nil else { return nil }
        case 7, 8:  // shutdown, sync
            break
        default:
            return nil
        }
        return at == payload.endIndex ? shape : nil
    }

    // MARK: helpers

    static func littleEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var value: UInt64 = 0
        for (index, byte) in bytes.enumerated() { value |= UInt64(byte) << UInt64(8 * index) }
        return value
    }

    static func encoding(_ frame: WorkerFrame) -> [UInt8] {
        var bytes: [UInt8] = []
        frame.encode(into: &bytes)
        return bytes
    }

    /// Equal frame lists, byte for byte (`==` on String is canonical equivalence).
    static func sameFrames(_ a: [WorkerFrame], _ b: [WorkerFrame]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { encoding($0) == encoding($1) }
    }

    static func stringCount(_ frame: WorkerFrame) -> Int {
        switch frame {
        case .hello(_, let taken): 2 * taken.count
        case .ready(_, _, let routes, let signatures, let refused): 3 + routes.count + 2 * (signatures.count + refused.count)
        case .loadFailed: 1
        case .request(_, _, let fields): 3 + 2 * (fields.parameters.count + fields.arguments.count)
        case .result(_, .outcome(let outcome)): 2 * outcome.parameters.count
        case .result(_, .declined), .returned, .shutdown, .sync: 0
        }
    }
}
