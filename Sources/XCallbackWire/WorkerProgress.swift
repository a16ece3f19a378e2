import CHostSupport
import XCallbackSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a worker had done when it died, in memory the host and the worker
/// share (a memfd): the answers it had not sent yet, and the last request
/// it began.
///
/// - The worker writes the id of each request before it calls the handler.
///   Requests are sent with rising ids and begun in that order, so every
///   request past that id never reached the plug-in: the host sends it to
///   the next worker, which is not a replay. One at or before it had
///   started and dies with the worker (`PluginCrashed`).
/// - The worker batches its answer frames in the page's outbox (see
///   `WorkerOutbox`), not in its private memory, so answers the plug-in
///   gave just before a crash are not lost with it: the host reads what the
///   socket did not bring from the outbox.
///
/// Shared memory, not a frame: this must survive a worker that dies between
/// any two instructions.
public final class WorkerProgress: @unchecked Sendable {
    // @unchecked: the words are touched through atomic loads and stores;
    // the outbox bytes only by the worker's outbox (under its lock) and, once
    // the worker is dead, by the host.
    /// The descriptor the worker finds the page on.
    public static let workerDescriptor: Int32 = 5
    private static let size = WorkerPageLayout.size
    private static let header = WorkerPageLayout.header

    private let base: UnsafeMutableRawPointer
    private var lastBegunWord: UnsafeMutablePointer<UInt64> { word(WorkerPageLayout.lastBegunOffset) }
    private var pendingWord: UnsafeMutablePointer<UInt64> { word(WorkerPageLayout.pendingOffset) }
    // Set by the sandbox's fatal-signal handler (`WorkerSandbox`).
    private var memoryWord: UnsafeMutablePointer<UInt64> { word(WorkerPageLayout.memoryOffset) }

    private func word(_ offset: Int) -> UnsafeMutablePointer<UInt64> {
        (base + offset).assumingMemoryBound(to: UInt64.self)
    }

    private init(base: UnsafeMutableRawPointer) {
        self.base = base
    }

    /// A new page for a worker about to start; `descriptor` is handed to it.
    public static func create() -> (progress: WorkerProgress, descriptor: Int32)? {
        let descriptor = xcallback_shared_page_create("xcallback-worker-progress", size)
        guard descriptor >= 0 else { return nil }
        guard let progress = map(descriptor) else {
            close(descriptor)
            return nil
        }
        return (progress, descriptor)
    }

    /// The worker's view of the page it inherited, if it did.
    public static func inherited() -> WorkerProgress? {
        map(workerDescriptor)
    }

    private static func map(_ descriptor: Int32) -> WorkerProgress? {
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
        guard let address, address != MAP_FAILED else { return nil }
        return WorkerProgress(base: address)
    }

    deinit { munmap(base, Self.size) }

    /// The worker is about to hand request `id` to the plug-in.
    public func begin(_ id: UInt64) { xcallback_store_release_u64(lastBegunWord, id) }

    /// The last request the worker says it began, read while it runs: its
    /// word, which it may write anything to. The host uses it only to tell
    /// a worker that is behind from one stuck in a handler.
    public var lastBegunClaim: UInt64 { xcallback_load_acquire_u64(lastBegunWord) }

    // MARK: the sandbox's report

    /// Where the worker's sandbox handler writes.
    public var sandboxReport: SandboxReport { SandboxReport(memory: memoryWord) }

    // MARK: the outbox

    /// Bytes the outbox holds.
    public static var outboxCapacity: Int { WorkerPageLayout.outboxCapacity }
    public var outbox: UnsafeMutableRawPointer { base + Self.header }

    /// Bytes of whole frames in the outbox not yet known to be written (the
    /// worker's side: the host reads the page only through `report`).
    public var pendingBytes: Int {
        get { Int(truncatingIfNeeded: xcallback_load_acquire_u64(pendingWord)) }
        set { xcallback_store_release_u64(pendingWord, UInt64(truncatingIfNeeded: newValue)) }
    }

    // MARK: the host's reading

    /// What the host may believe of the page of a worker that has been
    /// reaped (so it writes no more). The page is copied into the host's
    /// own memory first, and decoded from the copy by `WorkerPageReport`:
    /// a plug-in's process that still held the mapping cannot change a
    /// word between its check and its use.
    public func report(lastSent: UInt64) -> WorkerPageReport {
        let header = UnsafeRawBufferPointer(start: base, count: Self.header)
        let claimed = Int(clamping: header.loadUnaligned(fromByteOffset: WorkerPageLayout.pendingOffset, as: UInt64.self))
        let count = Self.header + min(max(claimed, 0), Self.outboxCapacity)
        let copy = Array(UnsafeRawBufferPointer(start: base, count: count))
        return copy.withUnsafeBytes { WorkerPageReport(decoding: $0, lastSent: lastSent) }
    }
}
