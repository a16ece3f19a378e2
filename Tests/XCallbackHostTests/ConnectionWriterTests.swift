import Foundation
import Testing

@testable import XCallbackHost
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#endif

/// `ConnectionWriter`: a socket client that does not read never blocks the
/// threads that append its records, only its own input (bounded), and only
/// for the grace period once the host stops.
@Suite("Connection writer", .ownThreads)
struct ConnectionWriterTests {
    /// A connected pair of Unix stream sockets: the host's end and the client's.
    final class SocketPair: @unchecked Sendable {
        let host: Int32
        let client: Int32

        init() throws {
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                throw SocketPairError()
            }
            host = ends[0]
            client = ends[1]
        }

        deinit {
            close(host)
            close(client)
        }

        /// Reads from the client's end until EOF.
        func readAll() -> [UInt8] {
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(client, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return received }
                received += chunk[0..<count]
            }
        }
    }

    struct SocketPairError: Error {}

    /// Runs `body` on its own thread; true if it returned within `timeout` seconds.
    static func returns(within timeout: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        return done.wait(timeout: .now() + timeout) == .success
    }

    /// Record `index`: 10 KiB, numbered, so order and completeness show.
    static func record(_ index: Int) -> [UInt8] {
        let head = Array("record \(index) ".utf8)
        return head + [UInt8](repeating: UInt8(ascii: "r"), count: 10_240 - head.count - 1) + [10]
    }

    @Test("appends never block on a client that is not reading; the input waits for room; all arrive in order")
    func backPressure() throws {
        let pair = try SocketPair()
        let writer = ConnectionWriter(descriptor: pair.host, maxWaitingRecords: 50, stop: StopSignal(),
                                      gracePeriod: .seconds(5), writeDeadline: .seconds(60))
        // 300 records of 10 KiB: far more than the socket buffers hold.
        let appended = Self.returns(within: 20) {
            for index in 0..<300 { writer.append { $0 += Self.record(index) } }
        }
        #expect(appended, "append blocked on a client that is not reading")

        let roomWaiter = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            writer.waitForRoom()
            roomWaiter.signal()
        }
        // There is no event for "still waiting"; a short bounded wait shows it.
        #expect(roomWaiter.wait(timeout: .now() + 0.2) == .timedOut, "waitForRoom returned with 300 records waiting")

        let received = ReceivedBytes()
        let reader = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            received.bytes = pair.readAll()
            reader.signal()
        }
        #expect(roomWaiter.wait(timeout: .now() + 20) == .success, "waitForRoom never returned once the client read")
        #expect(Self.returns(within: 20) { writer.finish() })
        shutdown(pair.host, Int32(SHUT_WR))
        #expect(reader.wait(timeout: .now() + 20) == .success)
        #expect(received.bytes == (0..<300).flatMap(Self.record))
    }

    @Test("once the host stops, finish waits the grace period for a client that is not reading, then gives up")
    func stopGivesUp() throws {
        let pair = try SocketPair()
        let stop = StopSignal()
        let writer = ConnectionWriter(descriptor: pair.host, maxWaitingRecords: 50, stop: stop,
                                      gracePeriod: .milliseconds(200), writeDeadline: .seconds(60))
        for index in 0..<100 { writer.append { $0 += Self.record(index) } }
        stop.raise()
        #expect(Self.returns(within: 20) { writer.finish() }, "finish did not give up after the grace period")
        #expect(Self.returns(within: 20) { writer.waitForRoom() })
        // The client finds the connection shut down after what it had been sent.
        let received = pair.readAll()
        #expect(received.count < 100 * 10_240)
    }

    @Test("a client that stops reading is dropped at the write deadline: its input goes on, and sees the end")
    func droppedAtDeadline() throws {
        let pair = try SocketPair()
        let dropped = DispatchSemaphore(value: 0)
        let writer = ConnectionWriter(descriptor: pair.host, maxWaitingRecords: 50, stop: StopSignal(),
                                      gracePeriod: .seconds(5), writeDeadline: .milliseconds(300),
                                      onDropped: { dropped.signal() })
        for index in 0..<300 { writer.append { $0 += Self.record(index) } }
        // No stop is raised: only the deadline ends the wait.
        #expect(Self.returns(within: 20) { writer.waitForRoom() }, "the input waited past the write deadline")
        #expect(dropped.wait(timeout: .now() + 20) == .success, "onDropped was not told")
        // Shut down both ways: the host's end reads the end of input.
        var byte: UInt8 = 0
        #expect(read(pair.host, &byte, 1) == 0)
        // Records appended afterwards are dropped, and nothing waits.
        #expect(Self.returns(within: 20) {
            writer.append { $0 += Self.record(0) }
            writer.finish()
        })
    }

    @Test("a client that is gone: records are dropped and nothing waits")
    func clientGone() throws {
        let pair = try SocketPair()
        let writer = ConnectionWriter(descriptor: pair.host, maxWaitingRecords: 50, stop: StopSignal(),
                                      gracePeriod: .seconds(5), writeDeadline: .seconds(60))
        // Shut down, not closed: the pair closes its descriptors once.
        shutdown(pair.client, Int32(SHUT_RDWR))
        #expect(Self.returns(within: 20) {
            for index in 0..<300 { writer.append { $0 += Self.record(index) } }
            writer.waitForRoom()
            writer.finish()
        })
    }
}

/// Bytes a reader thread hands back.
private final class ReceivedBytes: @unchecked Sendable {
    var bytes: [UInt8] = []
}
