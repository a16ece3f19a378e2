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
final class WorkerProgress: @unchecked Sendable {
    // @unchecked: the words are touched through atomic loads and stores;
    // the outbox bytes only by the worker's outbox (under its lock) and, once
    // the worker is dead, by the host.
    /// The descriptor the worker finds the page on.
    static let workerDescriptor: Int32 = 5
    /// A worker flushes its outbox at `BufferedWriter.threshold`; room for
    /// a few times that, so a batch seldom waits for a write.
    private static let size = 1 << 20
    private static let header = 64

    private let base: UnsafeMutableRawPointer
    private var lastBegunWord: UnsafeMutablePointer<UInt64> { base.assumingMemoryBound(to: UInt64.self) }
    private var pendingWord: UnsafeMutablePointer<UInt64> { (base + 8).assumingMemoryBound(to: UInt64.self) }
    // Set by the sandbox's fatal-signal handler (`WorkerSandbox`).
    private var memoryWord: UnsafeMutablePointer<UInt64> { (base + 16).assumingMemoryBound(to: UInt64.self) }

    private init(base: UnsafeMutableRawPointer) {
        self.base = base
    }

    /// A new page for a worker about to start; `descriptor` is handed to it.
    static func create() -> (progress: WorkerProgress, descriptor: Int32)? {
        let descriptor = xcallback_shared_page_create("xcallback-worker-progress", size)
        guard descriptor >= 0 else { return nil }
        guard let progress = map(descriptor) else {
            close(descriptor)
            return nil
        }
        return (progress, descriptor)
    }

    /// The worker's view of the page it inherited, if it did.
    static func inherited() -> WorkerProgress? {
        map(workerDescriptor)
    }

    private static func map(_ descriptor: Int32) -> WorkerProgress? {
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
        guard let address, address != MAP_FAILED else { return nil }
        return WorkerProgress(base: address)
    }

    deinit { munmap(base, Self.size) }

    /// The worker is about to hand request `id` to the plug-in.
    func begin(_ id: UInt64) { xcallback_store_release_u64(lastBegunWord, id) }

    /// The last request the worker began (0: none).
    var lastBegun: UInt64 { xcallback_load_acquire_u64(lastBegunWord) }

    // MARK: the sandbox's report

    /// Where the worker's sandbox handler writes.
    var sandboxReport: SandboxReport { SandboxReport(memory: memoryWord) }

    /// The worker died of a fatal signal close to its memory ceiling.
    var diedAtMemoryCeiling: Bool { xcallback_load_acquire_u64(memoryWord) != 0 }

    // MARK: the outbox

    /// Bytes the outbox holds.
    static var outboxCapacity: Int { size - header }
    var outbox: UnsafeMutableRawPointer { base + Self.header }

    /// Bytes of whole frames in the outbox not yet known to be written.
    var pendingBytes: Int {
        get { Int(xcallback_load_acquire_u64(pendingWord)) }
        set { xcallback_store_release_u64(pendingWord, UInt64(newValue)) }
    }

    /// The frames a dead worker left in its outbox. Some may also have
    /// reached the socket (it died between a write and marking it done):
    /// the host drops answers for requests it no longer waits for.
    func unsentFrames() -> [WorkerFrame] {
        let count = min(pendingBytes, Self.outboxCapacity)
        return FrameReader.frames(in: UnsafeRawBufferPointer(start: outbox, count: count))
    }
}
