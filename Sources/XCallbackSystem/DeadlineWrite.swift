#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Sends bytes to a client's socket by one deadline for the whole write,
/// never one per call: a socket timeout (`SO_SNDTIMEO`) bounds each call
/// only, and a client that takes a byte now and then, or none, would hold
/// the writer for as long as it likes. Every wait is a `poll` bounded by
/// what is left of the deadline, and ends early when `wake` (a stop's pipe)
/// becomes readable.
public enum DeadlineWrite {
    /// How a write ended.
    public enum Outcome: Sendable, Equatable {
        /// Every byte was sent.
        case written
        /// The client is gone (EPIPE, ECONNRESET, a shut-down socket…).
        case gone
        /// The deadline came first: the client did not take its bytes.
        case late
        /// `wake` became readable first.
        case woken
    }

    /// Sends all of `bytes` on `socket` by `deadline` (monotonic ns). The
    /// sends do not block (`MSG_DONTWAIT`), whatever the socket's own mode.
    public static func send(_ socket: Int32, _ bytes: UnsafeRawBufferPointer, deadline: UInt64,
                            wake: Int32 = -1) -> Outcome {
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.send(socket, bytes.baseAddress! + offset, bytes.count - offset,
                                   Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if count >= 0 {
                offset += count
                continue
            }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { return .gone }
            switch waitUntilWritable(socket, deadline: deadline, wake: wake) {
            case .written: continue
            case let other: return other
            }
        }
        return .written
    }

    /// The same for an array.
    public static func send(_ socket: Int32, _ bytes: [UInt8], deadline: UInt64, wake: Int32 = -1) -> Outcome {
        bytes.withUnsafeBytes { send(socket, $0, deadline: deadline, wake: wake) }
    }

    /// Waits until `socket` takes bytes (`written`: try again), or what
    /// ended the wait.
    public static func waitUntilWritable(_ socket: Int32, deadline: UInt64, wake: Int32 = -1) -> Outcome {
        while true {
            let now = MonotonicClock.now
            guard now < deadline else { return .late }
            var events = [pollfd(fd: socket, events: Int16(POLLOUT), revents: 0),
                          pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            // At most a minute at a time: the milliseconds must fit poll's int.
            let milliseconds = Int32(min((deadline - now) / 1_000_000 + 1, 60_000))
            let ready = poll(&events, wake >= 0 ? 2 : 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return .gone
            }
            if wake >= 0 && events[1].revents != 0 { return .woken }
            // POLLERR and POLLHUP too: the send after this says which.
            if events[0].revents != 0 { return .written }
        }
    }
}
