import CHostSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A pipe that becomes readable once the host is asked to stop, so every
/// thread blocked in poll() wakes up.
public final class StopSignal: Sendable {
    private let pipeEnds: (read: Int32, write: Int32)
    private let raised = Atomic<Bool>(false)
    private let raisedTime = Atomic<UInt64>(0)

    public init() {
        var ends: [Int32] = [0, 0]
        precondition(xcallback_pipe_cloexec(&ends) == 0, "pipe failed")
        for end in ends { _ = fcntl(end, F_SETFL, O_NONBLOCK) }
        pipeEnds = (ends[0], ends[1])
    }

    public var descriptor: Int32 { pipeEnds.read }
    public var isRaised: Bool { raised.load(ordering: .acquiring) }

    /// When it was raised (monotonic ns), if it was.
    public var raisedAt: UInt64? {
        let time = raisedTime.load(ordering: .acquiring)
        return time == 0 ? nil : time
    }

    public func raise() {
        guard !raised.exchange(true, ordering: .acquiringAndReleasing) else { return }
        raisedTime.store(MonotonicClock.now, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(pipeEnds.write, &byte, 1)
    }
}
