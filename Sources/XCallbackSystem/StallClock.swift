#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Waiting for a slow reader is not a stall, up to a point: a thread that
/// owns a loop's input and blocks writing to a full pipe or socket (a
/// worker, stdout) gets `readerPatience` instead of the watchdog's 50 ms,
/// so ordinary back-pressure does not hand the input to another thread that
/// would only queue behind the same reader (and take the slow path). A
/// reader that stops reading altogether (a wedged worker) still has the
/// input handed on after that, so the other plug-ins' requests, and a
/// stop, are not held up behind it.
public enum StallClock {
    /// How long a write to a worker may wait for it before the input moves
    /// on (`readerPatience` applies whatever the writer asked for).
    public static let readerPatience: UInt64 = 1_000_000_000
    /// Set in an item's stamp while its thread waits for a reader (stamps
    /// are odd, and this bit is not the time's).
    public static let waitingBit: UInt64 = 2

    /// This thread's loop and the stamp of its current item.
    public final class Owner {
        public unowned let loop: StallPausable
        public var stamp: UInt64 = 0

        public init(loop: StallPausable) { self.loop = loop }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    public static func setCurrent(_ owner: Owner?) {
        let previous = pthread_getspecific(key)
        if let previous { Unmanaged<Owner>.fromOpaque(previous).release() }
        pthread_setspecific(key, owner.map { Unmanaged.passRetained($0).toOpaque() })
    }

    /// Runs `body`, which may block on back-pressure, with this thread's
    /// stall clock stopped for up to `patience` ns (nil: for as long as the
    /// reader takes, for the output a user reads at their own pace).
    public static func whileWaitingForReader<R>(patience: UInt64?, _ body: () -> R) -> R {
        guard let raw = pthread_getspecific(key) else { return body() }
        let owner = Unmanaged<Owner>.fromOpaque(raw).takeUnretainedValue()
        // 0 is "idle", which the watchdog never hands off.
        let waiting = patience == nil ? 0 : MonotonicClock.coarseNow | 1 | waitingBit
        guard owner.stamp != 0, owner.stamp & waitingBit == 0, owner.loop.pause(owner.stamp, waiting: waiting) else {
            return body()
        }
        defer {
            let stamp = (MonotonicClock.coarseNow | 1) & ~waitingBit
            // Handed off meanwhile: the stamp stays the waiting one, which
            // the loop then finds gone and leaves.
            owner.stamp = owner.loop.resume(from: waiting, to: stamp) ? stamp : waiting
        }
        return body()
    }
}

/// A loop whose stall clock a blocked thread can stop.
public protocol StallPausable: AnyObject {
    func pause(_ stamp: UInt64, waiting: UInt64) -> Bool
    func resume(from waiting: UInt64, to stamp: UInt64) -> Bool
}
