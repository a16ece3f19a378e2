import XCallbackSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a worker writes its frames.
public protocol FrameOutput: Flushable {
    /// Adds the bytes of whole frames, in order, under the writer's lock.
    func append(_ fill: (inout [UInt8]) -> Void)
}

extension BufferedWriter: FrameOutput {}

/// The worker's side of its socket: frames batched as `BufferedWriter`
/// batches them (one write per burst, see `BatchingThread`), but in the
/// outbox of the page shared with the host (`WorkerProgress`). If the
/// plug-in crashes the worker before a batch is written, the answers in it
/// are not lost: the host reads them from the page. Thread-safe; frames keep
/// the order of `append`.
public final class WorkerOutbox: FrameOutput, @unchecked Sendable {
    // @unchecked: the outbox bytes and `scratch` are touched only under `lock`.
    private let page: WorkerProgress
    private let descriptor: Int32
    private let onClosed: @Sendable () -> Void
    private let lock = Lock(())
    // The lock orders every access; the runtime's exclusivity checks would
    // only add a thread-local lookup to each.
    @exclusivity(unchecked) private var scratch: [UInt8] = []
    @exclusivity(unchecked) private var closed = false

    /// `onClosed` runs when a write finds the host gone.
    public init(page: WorkerProgress, descriptor: Int32, onClosed: @escaping @Sendable () -> Void) {
        self.page = page
        self.descriptor = descriptor
        self.onClosed = onClosed
    }

    /// Adds the bytes of whole frames, written by `fill`.
    public func append(_ fill: (inout [UInt8]) -> Void) {
        let deferred = BatchingThread.isCurrent
        var closedNow = false
        lock.withLock { _ in
            guard !closed else { return }
            scratch.removeAll(keepingCapacity: true)
            fill(&scratch)
            let capacity = WorkerProgress.outboxCapacity
            if page.pendingBytes + scratch.count > capacity {
                closedNow = writePending()
            }
            if scratch.count > capacity {
                // Too big for the outbox: straight to the socket.
                closedNow = closedNow || scratch.withUnsafeBytes { BufferedWriter.writeAll(descriptor, $0) }
            } else if !closedNow {
                let pending = page.pendingBytes
                scratch.withUnsafeBytes { page.outbox.advanced(by: pending).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                // Published only once the frame is whole.
                page.pendingBytes = pending + scratch.count
                if !deferred || page.pendingBytes >= BufferedWriter.threshold { closedNow = writePending() }
            }
            if closedNow { closed = true }
        }
        if closedNow { onClosed() }
        if deferred { _ = BatchingThread.deferFlush(self) }
    }

    public func flush() {
        var closedNow = false
        lock.withLock { _ in
            guard !closed else { return }
            closedNow = writePending()
            if closedNow { closed = true }
        }
        if closedNow { onClosed() }
    }

    /// Writes the outbox, then marks it empty; true when the host is gone.
    /// A crash between the two leaves frames the host also read from the
    /// socket: it ignores answers to requests it no longer waits for.
    private func writePending() -> Bool {
        let pending = page.pendingBytes
        guard pending > 0 else { return false }
        let failed = BufferedWriter.writeAll(descriptor, UnsafeRawBufferPointer(start: page.outbox, count: pending))
        page.pendingBytes = 0
        return failed
    }
}
