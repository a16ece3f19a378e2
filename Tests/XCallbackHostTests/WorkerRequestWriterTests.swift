import Testing

@testable import XCallbackHost
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#endif

/// The host's writes to a worker (`WorkerRequestWriter`): they never wait
/// for the worker, keep their order, turn senders away only once the
/// worker has not read for a while, and say when it reads again. Driven
/// through a socketpair whose far end the test reads, or does not.
@Suite("Writes to a worker")
struct WorkerRequestWriterTests {
    /// Runs `body` on a thread of its own: it blocks on sockets, which a
    /// test must not do on Swift Testing's cooperative threads.
    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Threads.detach { continuation.resume(returning: body()) }
        }
    }

    static func socketPair() -> (host: Int32, worker: Int32) {
        var ends: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        return (ends[0], ends[1])
    }

    /// Frame `index` of a run: 4 KiB of its number, so order shows.
    static func frame(_ index: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 4096)
    }

    /// Reads `count` bytes from `descriptor` (or until it closes).
    static func read(_ count: Int, from descriptor: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < count {
            let got = Glibc.read(descriptor, &chunk, min(chunk.count, count - bytes.count))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            bytes += chunk[0..<got]
        }
        return bytes
    }

    @Test("8 MiB to a worker that reads nothing: the sender goes on; once it reads, all arrives in order",
          .timeLimit(.minutes(1)))
    func neverWaitsAndKeepsOrder() async {
        let outcome = await Self.onOwnThread { () -> (turnedAway: Bool, resumed: Bool, inOrder: Bool) in
            let (host, worker) = Self.socketPair()
            defer { close(host); close(worker) }
            let resumed = ConditionLock(false)
            let writer = WorkerRequestWriter(descriptor: host, onResumed: {
                resumed.withLock { $0 = true }
                resumed.broadcast()
            })
            // Far more than a socket holds, and nobody reads: if a send
            // waited for the worker, this would never return.
            for index in 0..<2048 { writer.append { $0 += Self.frame(index) } }
            // Past the flusher's patience, a sender is turned away.
            var turnedAway = false
            for _ in 0..<500 where !turnedAway {
                usleep(10_000)
                turnedAway = writer.turnAwayIfBusy()
            }
            // The worker reads: everything, in order; then it is resumed.
            let received = Self.read(2048 * 4096, from: worker)
            let expected = (0..<2048).flatMap { Self.frame($0) }
            let wasResumed = resumed.wait(until: { $0 }, deadline: MonotonicClock.now + 10_000_000_000) { $0 }
            writer.close()
            return (turnedAway, wasResumed, received == expected)
        }
        #expect(outcome.turnedAway, "a flusher waiting past 100 ms turns senders away")
        #expect(outcome.inOrder, "every byte arrives, in the order appended")
        #expect(outcome.resumed, "the sender turned away hears that the worker reads again")
    }

    @Test("close ends the flusher of a worker that never reads, and nothing is written after it",
          .timeLimit(.minutes(1)))
    func closeEndsTheFlusher() async {
        let written = await Self.onOwnThread { () -> Bool in
            let (host, worker) = Self.socketPair()
            defer { close(worker) }
            let writer = WorkerRequestWriter(descriptor: host)
            for index in 0..<512 { writer.append { $0 += Self.frame(index) } }
            // Returns once the flusher is not writing (its write fails when
            // the socket is shut down), so the descriptor can be closed.
            writer.close()
            close(host)
            writer.append { $0 += Self.frame(0) }
            return true
        }
        #expect(written)
    }
}
