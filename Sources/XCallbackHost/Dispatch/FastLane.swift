import CXCallback
import Synchronization
import XCallbackBridge
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

    /// The line being dispatched, parsed in place. Behind a pointer, so
    /// passing it on borrows it: a stored property would be copied for the
    /// call (its arrays retained and released).
    private let lineStorage: UnsafeMutablePointer<RequestLine>
    var line: RequestLine {
        _read { yield lineStorage.pointee }
        _modify { yield &lineStorage.pointee }
    }
    /// The parsed line by address, for `NativeRequest.fill` and
    /// `RequestFrame.writeLine`: passed as a value, even `borrowing`, it was
    /// copied for each call, its two arrays retained and released.
    var parsedLine: UnsafePointer<RequestLine> { UnsafePointer(lineStorage) }
    /// The request handed to the handler, refilled for every line.
    @exclusivity(unchecked) private var nativeStorage = NativeRequest()
    /// The same, unretained, for the dispatching thread to borrow
    /// (`_withUnsafeGuaranteedRef`): read from a `var`, it was retained and
    /// released for every line. Only that thread replaces it (`replaceNative`).
    @exclusivity(unchecked) private(set) var native: Unmanaged<NativeRequest>
    /// Where the handler's answer is kept when it answers in place.
    let capture = ReplyCapture()
    /// The route table as of `generation`, and the same unretained, to
    /// borrow as `native` is: only the dispatching thread swaps it (`use`).
    @exclusivity(unchecked) private var snapshotStorage: RouteSnapshot?
    @exclusivity(unchecked) private(set) var snapshot: Unmanaged<RouteSnapshot>?
    @exclusivity(unchecked) private(set) var generation: UInt64 = .max
    /// Room for a route key.
    @exclusivity(unchecked) private(set) var scratch: UnsafeMutableBufferPointer<UInt8>
    /// Room for the line's three callback URLs, decoded (`hasDeliverableCallbacks`).
    @exclusivity(unchecked) private var callbackScratch: UnsafeMutableBufferPointer<UInt8>
    /// The decoded `x-success`, `x-error` and `x-cancel` of the line, in `callbackScratch`.
    @exclusivity(unchecked) private var callbacks = (success: UnsafeBufferPointer<UInt8>?.none,
                                                     error: UnsafeBufferPointer<UInt8>?.none,
                                                     cancel: UnsafeBufferPointer<UInt8>?.none)

    private let busy = Atomic<Bool>(false)
    /// The reply token of the call inside a handler now, plus one (0: none):
    /// how the deadline timer finds a handler that runs too long.
    let inFlight = Atomic<UInt64>(0)
    /// Which of its requests the lane times on the fine clock, and the fine
    /// start of its call in flight (0: not sampled), for the deadline
    /// timer that may take the call over.
    let sampler = LatencySampler()
    let fineStarted = Atomic<UInt64>(0)
    /// Where the call inside a handler now keeps its state (`ReplyTable`);
    /// unretained, as the reply table keeps its slots for good.
    @exclusivity(unchecked) var replySlot = HostAPI.replies.takeSlot().map(Unmanaged.passUnretained)

    init() {
        native = .passUnretained(nativeStorage)
        lineStorage = .allocate(capacity: 1)
        lineStorage.initialize(to: RequestLine())
        scratch = .allocate(capacity: 4096)
        callbackScratch = .allocate(capacity: 3 * 4096)
    }

    deinit {
        lineStorage.deinitialize(count: 1)
        lineStorage.deallocate()
        scratch.deallocate()
        callbackScratch.deallocate()
        if let replySlot { HostAPI.replies.giveBack(replySlot.takeUnretainedValue()) }
    }

    /// Takes `snapshot` as the route table as of `generation`.
    func use(_ snapshot: RouteSnapshot?, generation: UInt64) {
        snapshotStorage = snapshot
        self.snapshot = snapshot.map(Unmanaged.passUnretained)
        self.generation = generation
    }

    /// A fresh request for the next line: a promoted call keeps the one it
    /// was handed. The caller must no longer use the one it borrowed.
    func replaceNative() {
        nativeStorage = NativeRequest()
        native = .passUnretained(nativeStorage)
    }

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
                key[count] = byte.asciiLowercased
                count += 1
            }
            key[count] = 0
            count += 1
        }
        appendLowercased(line.scheme)
        appendLowercased(line.host)
        // Indexed in place: iterating the array retained and released it.
        for index in 0..<lineStorage.pointee.path.count {
            let segment = lineStorage.pointee.path[index]
            (key + count).update(from: base + segment.start, count: segment.count)
            count += segment.count
            key[count] = 0
            count += 1
        }
        return snapshot.literals.route(forKey: UnsafeBufferPointer(start: key, count: count))
    }

    /// Whether every callback the line names decodes to a URL with a
    /// scheme; the decoded URLs are kept for `decodedCallback(for:)`.
    func hasDeliverableCallbacks(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Each decodes into its own third: the decoder may write whole
        // words past its value, up to the end of the line.
        let region = bytes.count + 8
        if 3 * region > callbackScratch.count {
            callbackScratch.deallocate()
            callbackScratch = .allocate(capacity: 3 * region)
        }
        guard let base = callbackScratch.baseAddress,
              case .given(let success) = decode(line.success, bytes, into: base),
              case .given(let error) = decode(line.error, bytes, into: base + region),
              case .given(let cancel) = decode(line.cancel, bytes, into: base + 2 * region)
        else { return false }
        callbacks = (success, error, cancel)
        return true
    }

    private enum DecodedCallback {
        /// Absent (nil), or decoded to a URL with a scheme.
        case given(UnsafeBufferPointer<UInt8>?)
        /// A malformed escape, or no scheme: the general path refuses the line.
        case undeliverable
    }

    private func decode(_ span: RequestLine.Span?, _ bytes: UnsafeBufferPointer<UInt8>,
                        into target: UnsafeMutablePointer<UInt8>) -> DecodedCallback {
        guard let span else { return .given(nil) }
        guard let count = RequestLine.decodeValue(span, in: bytes, into: target) else { return .undeliverable }
        let url = UnsafeBufferPointer(start: UnsafePointer(target), count: count)
        return Dispatcher.hasScheme(url) ? .given(url) : .undeliverable
    }

    /// The decoded `x-success`, `x-error` and `x-cancel` of the last line
    /// `hasDeliverableCallbacks` passed.
    var decodedCallbacks: (success: UnsafeBufferPointer<UInt8>?, error: UnsafeBufferPointer<UInt8>?,
                           cancel: UnsafeBufferPointer<UInt8>?) { callbacks }

    /// The decoded callback URL for an outcome of `kind`, as
    /// `RequestURL.callbackURL(for:)` picks it (nil when absent or empty).
    func decodedCallback(for kind: OutcomeKind) -> UnsafeBufferPointer<UInt8>? {
        kind.callback(success: callbacks.success, error: callbacks.error, cancel: callbacks.cancel)
    }
}

extension SynchronousCall {
    /// The sink the host's lane put in the call, as the host's type: the
    /// bridge keeps it as `AnyObject` because it sits below `OutputSink`.
    var outputSink: OutputSink { unsafeDowncast(sink!, to: OutputSink.self) }
}
