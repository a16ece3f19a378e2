#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Marks the threads that read input: a record completed on such a thread
/// is written when the thread has read all the input it has (before it
/// blocks for more), so a burst of lines costs one write, not one each.
/// Records completed on any other thread are written at once.
enum BatchingThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var isCurrent: Bool {
        pthread_getspecific(key) != nil
    }

    static func markCurrent() {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
    }
}
