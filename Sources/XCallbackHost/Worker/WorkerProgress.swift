import CHostSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How far a worker got: the id of the last request it began, in a page
/// the host and the worker share. The worker writes it before it calls the
/// handler; the host reads it after the worker died. Requests are sent with
/// rising ids and begun in the order they were sent, so every request past
/// that id never reached the plug-in: it is sent to the next worker, which
/// is not a replay. A request at or before it had started and dies with the
/// worker (`PluginCrashed`, or `Timeout` when the host gave up first).
///
/// Shared memory, not a frame: the answer must survive a worker that dies
/// between beginning a request and anything it could send.
final class WorkerProgress: @unchecked Sendable {
    // @unchecked: the word is only touched through atomic loads and stores.
    /// The descriptor the worker finds the page on.
    static let workerDescriptor: Int32 = 5
    private static let size = 4096

    private let word: UnsafeMutablePointer<UInt64>

    private init(word: UnsafeMutablePointer<UInt64>) {
        self.word = word
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
        return WorkerProgress(word: address.assumingMemoryBound(to: UInt64.self))
    }

    deinit { munmap(word, Self.size) }

    /// The worker is about to hand request `id` to the plug-in.
    func begin(_ id: UInt64) { xcallback_store_release_u64(word, id) }

    /// The last request the worker began (0: none).
    var lastBegun: UInt64 { xcallback_load_acquire_u64(word) }
}
