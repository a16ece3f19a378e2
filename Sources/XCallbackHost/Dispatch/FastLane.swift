import Synchronization
import XCallbackURL

/// One input stream's fast path: the workspace that lets a request whose
/// handler answers before it returns go from line to record without a heap
/// object, a String or a timer entry (see `Dispatcher.submitFast`).
///
/// One thread uses a lane at a time (`enter`/`leave`): after a stall
/// hand-off the stalled thread still holds it, and the new reader takes
/// the general path until it is free again.
final class FastLane: @unchecked Sendable {
    // @unchecked: everything but the atomics is touched only by the thread
    // that entered; the deadline timer reads `inFlight` alone. For the same
    // reason the runtime's exclusivity checks (a thread-local lookup per
    // access, several per request) are off for these.

    /// The line being dispatched, parsed in place.
    @exclusivity(unchecked) var line = RequestLine()
    /// The request handed to the handler, refilled for every line.
    @exclusivity(unchecked) var native = NativeRequest()
    /// Where the handler's answer is kept when it answers in place.
    let capture = ReplyCapture()
    /// The route table as of `generation`.
    @exclusivity(unchecked) var snapshot: RouteSnapshot?
    @exclusivity(unchecked) var generation: UInt64 = .max
    /// Room for a route key or a decoded callback URL.
    @exclusivity(unchecked) private(set) var scratch: UnsafeMutableBufferPointer<UInt8>

    private let busy = Atomic<Bool>(false)
    /// The reply token of the call inside a handler now, plus one (0: none):
    /// how the deadline timer finds a handler that runs too long.
    let inFlight = Atomic<UInt64>(0)

    init() {
        scratch = .allocate(capacity: 4096)
    }

    deinit { scratch.deallocate() }

    func enter() -> Bool {
        busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
    }

    func leave() {
        busy.store(false, ordering: .releasing)
    }

    /// Scratch room for at least `count` bytes.
    func reserveScratch(_ count: Int) {
        guard count > scratch.count else { return }
        scratch.deallocate()
        scratch = .allocate(capacity: max(count, 2 * scratch.count))
    }

    /// The route the parsed `line` reaches through literal segments, if any.
    func literalRoute(in bytes: UnsafeBufferPointer<UInt8>, snapshot: RouteSnapshot) -> Int? {
        reserveScratch(bytes.count + line.path.count + 3)
        guard let base = bytes.baseAddress, let key = scratch.baseAddress else { return nil }
        var count = 0
        @inline(__always) func appendLowercased(_ span: RequestLine.Span) {
            for index in span.start..<span.end {
                let byte = base[index]
                key[count] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                count += 1
            }
            key[count] = 0
            count += 1
        }
        appendLowercased(line.scheme)
        appendLowercased(line.host)
        for segment in line.path {
            (key + count).update(from: base + segment.start, count: segment.count)
            count += segment.count
            key[count] = 0
            count += 1
        }
        return snapshot.literals.route(forKey: UnsafeBufferPointer(start: key, count: count))
    }

    /// Whether every callback the line names decodes to a URL with a scheme.
    func hasDeliverableCallbacks(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        isDeliverable(line.success, bytes) && isDeliverable(line.error, bytes) && isDeliverable(line.cancel, bytes)
    }

    private func isDeliverable(_ span: RequestLine.Span?, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let span else { return true }
        guard let url = decodedCallback(span, in: bytes) else { return false }
        return Dispatcher.hasScheme(url)
    }

    /// The callback span decoded into scratch, or nil when it does not decode.
    func decodedCallback(_ span: RequestLine.Span, in bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        reserveScratch(bytes.count + 8)
        guard let target = scratch.baseAddress,
              let count = RequestLine.decodeValue(span, in: bytes, into: target) else { return nil }
        return UnsafeBufferPointer(start: target, count: count)
    }
}

/// What a fast lane knows of a call, kept in its reply slot so the
/// general path can take the request over (`ReplyTable`). A worker's lane
/// (`WorkerLane`) has no line and no sink: its host keeps those.
struct SynchronousCall: @unchecked Sendable {
    // @unchecked: `line` points into the input buffer the dispatching
    // thread holds until the call has ended or been taken over, and the
    // sink outlives its input stream's requests.
    var line: UnsafeBufferPointer<UInt8>
    var id: UInt64
    var sequence: UInt64
    /// The host lane's (always there); nil in a worker.
    unowned(unsafe) var sink: OutputSink?
    /// Monotonic nanoseconds when the handler was called.
    var started: UInt64
    var plugin: String
    /// The lane's, which outlives the call.
    unowned(unsafe) var capture: ReplyCapture
}
