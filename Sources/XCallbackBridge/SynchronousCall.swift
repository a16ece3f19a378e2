import CXCallback

/// What a fast lane knows of a call, kept in its reply slot so the
/// general path can take the request over (`ReplyTable`). A worker's lane
/// (`WorkerLane`) has no line and no sink: its host keeps those.
public struct SynchronousCall: @unchecked Sendable {
    // @unchecked: `line` points into the input buffer the dispatching
    // thread holds until the call has ended or been taken over, and the
    // sink outlives its input stream's requests.
    public var line: UnsafeBufferPointer<UInt8>
    public var id: UInt64
    public var sequence: UInt64
    /// The host lane's output sink (always there); nil in a worker. The
    /// bridge cannot name the host's sink type, and the host reads it back
    /// as its own (`Dispatcher+FastLane`).
    public unowned(unsafe) var sink: AnyObject?
    /// Monotonic nanoseconds when the handler was called.
    public var started: UInt64
    public var plugin: String
    /// The lane's, which outlives the call.
    public unowned(unsafe) var capture: ReplyCapture
    /// Who takes the call over when its handler declines while it still
    /// runs (the host's dispatcher); nil in a worker, whose host decides.
    public unowned(unsafe) var owner: (any SynchronousCallOwner)?

    // Inlinable: the fast lane makes one per request, from the host module.
    @inlinable
    public init(line: UnsafeBufferPointer<UInt8>, id: UInt64, sequence: UInt64, sink: AnyObject?, started: UInt64,
                 plugin: String, capture: ReplyCapture, owner: (any SynchronousCallOwner)?) {
        self.line = line
        self.id = id
        self.sequence = sequence
        self.sink = sink
        self.started = started
        self.plugin = plugin
        self.capture = capture
        self.owner = owner
    }
}

/// Takes a synchronous call over for the general path.
public protocol SynchronousCallOwner: AnyObject, Sendable {
    /// The delivery for `call`, now handled like any pending request.
    func takeOver(_ call: SynchronousCall, reply: xcallback_reply) -> ReplyTable.Delivery
}
