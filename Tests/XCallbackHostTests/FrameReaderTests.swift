import Testing
@testable import XCallbackBridge
@testable import XCallbackSystem
import XCallbackURL
@testable import XCallbackWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `FrameReader`, the host's one reader of what a worker writes: frames come
/// out whole and in order however the bytes are cut, a malformed frame stops
/// the reader for good (never a frame past it), a frame cut short by the
/// peer's end is no frame, and an oversized length is refused from its
/// header alone. Fed through socketpairs the tests write: `SOCK_SEQPACKET`
/// where the cut matters (each `read` then returns exactly one packet, so a
/// test decides what every read sees), `SOCK_STREAM` for bulk.
@Suite("Frame reader")
struct FrameReaderTests {
    enum Event: Equatable, Sendable, CustomStringConvertible {
        case frame(WorkerFrame)
        case end
        case malformed
        case intercepted

        init(_ next: FrameReader.Next) {
            switch next {
            case .frame(let frame): self = .frame(frame)
            case .end: self = .end
            case .malformed: self = .malformed
            case .intercepted: self = .intercepted
            }
        }

        var description: String {
            switch self {
            case .frame(let frame): "\(frame)"
            case .end: "end"
            case .malformed: "malformed"
            case .intercepted: "intercepted"
            }
        }
    }

    static let samples = FrameCodecTests.samples

    static func bytes(_ frames: [WorkerFrame]) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { frame.encode(into: &bytes) }
        return bytes
    }

    /// A frame header: `length` (little-endian) and `kind`, no payload.
    static func header(length: UInt32, kind: UInt8) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: length >> (8 * UInt32($0))) } + [kind]
    }

    static func socketPair(_ type: __socket_type) -> (reader: Int32, writer: Int32) {
        var ends: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        return (ends[0], ends[1])
    }

    /// Writes each packet whole (one `send` each), retrying short writes
    /// (a stream socket may take part of one). Stops if the reader is gone
    /// (a test that failed early): no SIGPIPE, no error to wait on.
    static func write(_ packets: [[UInt8]], to descriptor: Int32) {
        for packet in packets {
            let sent = packet.withUnsafeBytes { raw -> Bool in
                var offset = 0
                repeat {
                    let count = send(descriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL))
                    if count < 0 && errno == EINTR { continue }
                    guard count >= 0 else { return false }
                    offset += count
                } while offset < raw.count
                return true
            }
            guard sent else { return }
        }
    }

    /// Reads with `reader` until it ends, stops, or `limit` events came.
    static func drain(_ reader: FrameReader, limit: Int = .max, beforeBlocking: () -> Void = {},
                      intercept: FrameReader.Intercept? = nil) -> [Event] {
        var events: [Event] = []
        while events.count < limit {
            let event = Event(reader.next(beforeBlocking: beforeBlocking, intercept: intercept))
            events.append(event)
            if event == .end || event == .malformed { break }
        }
        return events
    }

    /// Sends `packets` on a fresh socketpair of `type` (from a writer thread,
    /// which then closes its end) and reads them all with a `FrameReader`;
    /// the events and how many times it was about to block.
    static func exchange(_ packets: [[UInt8]], type: __socket_type = SOCK_SEQPACKET,
                         intercept: FrameReader.Intercept? = nil) -> (events: [Event], blocks: Int) {
        let (readEnd, writeEnd) = socketPair(type)
        defer { close(readEnd) }
        Threads.detach {
            write(packets, to: writeEnd)
            close(writeEnd)
        }
        var blocks = 0
        let events = drain(FrameReader(descriptor: readEnd), beforeBlocking: { blocks += 1 }, intercept: intercept)
        return (events, blocks)
    }

    /// As `exchange`, for packets small enough to sit in the socket's buffer
    /// together: written up front from this thread, no writer thread.
    static func exchangeSmall(_ packets: [[UInt8]]) -> [Event] {
        let (readEnd, writeEnd) = socketPair(SOCK_SEQPACKET)
        defer { close(readEnd) }
        write(packets, to: writeEnd)
        close(writeEnd)
        return drain(FrameReader(descriptor: readEnd))
    }

    /// What a reader must make of `frames` followed by `tail` (bytes that
    /// make no whole frame, or a malformed one): every frame, then `last`.
    static func expected(_ frames: [WorkerFrame], then last: Event) -> [Event] {
        frames.map(Event.frame) + [last]
    }

    // MARK: whole frames

    @Test("every kind, pipelined in one write, comes out whole and in order, then the end")
    func pipelined() async {
        let frames = Self.samples + Self.samples.reversed() + Self.samples
        let result = await awaitOwnThread { Self.exchange([Self.bytes(frames)], type: SOCK_STREAM) }
        #expect(result?.events == Self.expected(frames, then: .end))
    }

    @Test("a stream cut at every byte boundary reads the same: valid, malformed in the middle, oversized at the end",
          arguments: [
              ("valid", Self.bytes(Self.samples), Self.expected(Self.samples, then: .end)),
              ("unknown kind", Self.bytes(Array(Self.samples[0..<4])) + Self.header(length: 2, kind: 0) + [1, 2]
                  + Self.bytes(Array(Self.samples[4...])), Self.expected(Array(Self.samples[0..<4]), then: .malformed)),
              ("bad payload", Self.bytes([.returned(id: 1)]) + Self.header(length: 1, kind: 7) + [0]
                  + Self.bytes([.shutdown]), Self.expected([.returned(id: 1)], then: .malformed)),
              ("oversized", Self.bytes([.shutdown, .returned(id: 2)]) + Self.header(length: .max, kind: 5)
                  + [1, 2, 3], Self.expected([.shutdown, .returned(id: 2)], then: .malformed)),
          ] as [(String, [UInt8], [Event])])
    func everyCut(_ name: String, _ stream: [UInt8], _ expected: [Event]) async {
        let mismatches = await awaitOwnThread { () -> [Int] in
            (1..<stream.count).filter { cut in
                Self.exchangeSmall([Array(stream[..<cut]), Array(stream[cut...])]) != expected
            }
        }
        #expect(mismatches == [], "\(name): cuts that read differently")
        // And in one piece.
        #expect(await awaitOwnThread { Self.exchangeSmall([stream]) } == expected, "\(name)")
    }

    @Test("a stream arriving one byte per read reads the same, and the reader says it blocks before each read")
    func oneByteAtATime() async {
        let stream = Self.bytes(Self.samples)
        let result = await awaitOwnThread { Self.exchange(stream.map { [$0] }) }
        #expect(result?.events == Self.expected(Self.samples, then: .end))
        // One read per packet and one that finds the end, each after `beforeBlocking`.
        #expect(result?.blocks == stream.count + 1)
    }

    @Test("frames already buffered are returned without another read; beforeBlocking runs only when one is needed")
    func noReadWhileBuffered() async {
        // Three packets of three frames each: three reads and the end's.
        let packets = (0..<3).map { index in Self.bytes((0..<3).map { WorkerFrame.returned(id: UInt64(index * 3 + $0)) }) }
        let result = await awaitOwnThread { Self.exchange(packets) }
        #expect(result?.events == Self.expected((0..<9).map { .returned(id: UInt64($0)) }, then: .end))
        #expect(result?.blocks == 4)
    }

    @Test("a burst far larger than one read's chunk keeps every frame whole, small and large")
    func largeBurst() async {
        let big = String(repeating: "x", count: 300_000)
        var frames: [WorkerFrame] = (0..<20_000).map { .returned(id: UInt64($0)) }
        frames.insert(.result(id: 1, result: .outcome(Outcome(kind: .success, parameters: [QueryParameter("big", big)]))), at: 9_000)
        frames.append(.loadFailed(message: big))
        let stream = Self.bytes(frames)
        let result = await awaitOwnThread { Self.exchange([stream], type: SOCK_STREAM) }
        #expect(result?.events.count == frames.count + 1)
        #expect(result?.events == Self.expected(frames, then: .end))
    }

    @Test("a payload of exactly maxPayload bytes is a frame; one byte more is refused from the header")
    func maxPayloadBoundary() async {
        // loadFailed's payload: a 4-byte length, then the message.
        let message = String(repeating: "m", count: WorkerFrame.maxPayload - 4)
        let largest = WorkerFrame.loadFailed(message: message)
        let stream = Self.bytes([largest])
        #expect(stream.count == 5 + WorkerFrame.maxPayload)
        let result = await awaitOwnThread { Self.exchange([stream], type: SOCK_STREAM) }
        #expect(result?.events == [.frame(largest), .end])

        let over = Self.header(length: UInt32(WorkerFrame.maxPayload + 1), kind: 3)
        #expect(await awaitOwnThread { Self.exchangeSmall([over]) } == [.malformed])
    }

    // MARK: frames that are not

    @Test("an oversized length is refused at once, without waiting for a payload that never comes",
          arguments: [UInt32(WorkerFrame.maxPayload + 1), 0x7FFF_FFFF, 0x8000_0000, .max - 4, .max])
    func oversizedWithoutWaiting(_ length: UInt32) async {
        let (readEnd, writeEnd) = Self.socketPair(SOCK_STREAM)
        defer { close(readEnd); close(writeEnd) }
        // The writer stays open: a reader that waited for the payload would
        // block here until the test shuts the socket down.
        Self.write([Self.bytes([.shutdown]) + Self.header(length: length, kind: 5)], to: writeEnd)
        let events = await awaitOwnThread(within: 30) { Self.drain(FrameReader(descriptor: readEnd)) }
        if events == nil { shutdown(readEnd, Int32(SHUT_RDWR)) }
        #expect(events == [.frame(.shutdown), .malformed])
    }

    @Test("the reader stops at the first malformed frame: asking again never gives a frame past it",
          arguments: [
              Self.header(length: 0, kind: 0),
              Self.header(length: 0, kind: 9),
              Self.header(length: 3, kind: 0xFF) + [1, 2, 3],
              Self.header(length: 1, kind: WorkerFrame.Kind.shutdown.rawValue) + [0],
              Self.header(length: 7, kind: WorkerFrame.returnedKind) + [1, 2, 3, 4, 5, 6, 7],
              Self.header(length: 10, kind: WorkerFrame.resultKind) + [1, 0, 0, 0, 0, 0, 0, 0, 9, 0],
              Self.header(length: 4, kind: WorkerFrame.Kind.loadFailed.rawValue) + [0xFF, 0xFF, 0xFF, 0xFF],
              Self.header(length: UInt32(WorkerFrame.maxPayload + 1), kind: WorkerFrame.resultKind),
          ])
    func stopsAtFirstMalformed(_ bad: [UInt8]) async {
        let before: [WorkerFrame] = [.returned(id: 1), .shutdown]
        let after: [WorkerFrame] = [.returned(id: 2), .loadFailed(message: "after")]
        let events = await awaitOwnThread { () -> [Event] in
            let (readEnd, writeEnd) = Self.socketPair(SOCK_STREAM)
            defer { close(readEnd) }
            Self.write([Self.bytes(before) + bad + Self.bytes(after)], to: writeEnd)
            close(writeEnd)
            let reader = FrameReader(descriptor: readEnd)
            // Asked again and again past the malformed one (a caller that
            // ignored it): the same answer every time.
            return (0..<6).map { _ in Event(reader.next(beforeBlocking: {})) }
        }
        #expect(events == before.map(Event.frame) + Array(repeating: .malformed, count: 4))
        #expect(bad.withUnsafeBytes { FrameReader.frames(in: $0) } == [])
        let stream = Self.bytes(before) + bad + Self.bytes(after)
        #expect(stream.withUnsafeBytes { FrameReader.frames(in: $0) } == before)
    }

    @Test("a frame cut short by the peer's end is no frame: the stream ends after the whole ones")
    func truncatedAtTheEnd() async {
        let whole: [WorkerFrame] = [.returned(id: 5)]
        let mismatches = await awaitOwnThread { () -> [String] in
            var mismatches: [String] = []
            for frame in Self.samples {
                let bytes = Self.bytes([frame])
                for count in 0..<bytes.count {
                    let events = Self.exchangeSmall([Self.bytes(whole) + bytes[..<count]])
                    if events != Self.expected(whole, then: .end) { mismatches.append("\(frame) cut at \(count): \(events)") }
                }
            }
            return mismatches
        }
        #expect(mismatches == [])
    }

    @Test("a descriptor that cannot be read ends the stream")
    func unreadableDescriptor() {
        // EBADF at once: nothing here can block.
        #expect(Self.drain(FrameReader(descriptor: -1)) == [.end])
        let (readEnd, writeEnd) = Self.socketPair(SOCK_STREAM)
        close(writeEnd)
        #expect(Self.drain(FrameReader(descriptor: readEnd)) == [.end])
        close(readEnd)
    }

    // MARK: interception

    @Test("intercept sees every frame once, in order: consumed ones are not returned, a handed-over one returns intercepted")
    func interception() async {
        let frames: [WorkerFrame] = [
            .returned(id: 1), .result(id: 2, result: .outcome(.cancel)), .returned(id: 3), .shutdown,
            .result(id: 4, result: .declined), .loadFailed(message: "x"),
        ]
        let seen = Lock<[(UInt8, [UInt8])]>([])
        // Split mid-frame too: a frame is seen once, when it is whole.
        let stream = Self.bytes(frames)
        let packets = [Array(stream[..<7]), Array(stream[7..<30]), Array(stream[30...])]
        let result = await awaitOwnThread {
            Self.exchange(packets, intercept: { kind, payload in
                seen.withLock { $0.append((kind, Array(payload))) }
                switch kind {
                case WorkerFrame.returnedKind: return .consumed
                case WorkerFrame.resultKind: return .handedOver
                default: return .decode
                }
            })
        }
        #expect(result?.events == [.intercepted, .frame(.shutdown), .intercepted, .frame(.loadFailed(message: "x")), .end])
        let expectedSeen = frames.map { frame -> (UInt8, [UInt8]) in
            let bytes = Self.bytes([frame])
            return (bytes[4], Array(bytes[5...]))
        }
        let actuallySeen = seen.withLock { $0 }
        #expect(actuallySeen.map(\.0) == expectedSeen.map(\.0))
        #expect(actuallySeen.map(\.1) == expectedSeen.map(\.1))
    }

    @Test("a frame intercept takes is not decoded; one it leaves is, and may be malformed; an oversized one it never sees")
    func interceptAndMalformed() async {
        let bad = Self.header(length: 1, kind: WorkerFrame.returnedKind) + [0]
        let taken = await awaitOwnThread {
            Self.exchange([bad + Self.bytes([.shutdown])], intercept: { _, _ in .consumed }).events
        }
        #expect(taken == [.end], "a consumed frame is the interceptor's, well-formed or not")
        let left = await awaitOwnThread {
            Self.exchange([bad + Self.bytes([.shutdown])], intercept: { _, _ in .decode }).events
        }
        #expect(left == [.malformed])
        let calls = Lock(0)
        let oversized = await awaitOwnThread {
            Self.exchange([Self.header(length: .max, kind: WorkerFrame.resultKind)], intercept: { _, _ in
                calls.withLock { $0 += 1 }
                return .consumed
            }).events
        }
        #expect(oversized == [.malformed])
        #expect(calls.withLock { $0 } == 0)
    }

    // MARK: frames(in:)

    @Test("frames(in:) of every prefix of a stream is exactly the whole frames in it")
    func framesInPrefixes() {
        var ends: [Int] = []
        var stream: [UInt8] = []
        for frame in Self.samples {
            frame.encode(into: &stream)
            ends.append(stream.count)
        }
        for count in 0...stream.count {
            let whole = ends.filter { $0 <= count }.count
            let found = stream[..<count].withUnsafeBytes { FrameReader.frames(in: $0) }
            #expect(found == Array(Self.samples[..<whole]), "prefix of \(count) bytes")
        }
    }
}
