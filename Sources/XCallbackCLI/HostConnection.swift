import ArgumentParser
import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

/// One connection to a running host's socket, as `call` uses it: one request
/// line, then the write side is shut (the host's end-of-requests signal),
/// then the record comes back.
final class HostConnection {
    let path: String
    private let descriptor: Int32
    private var received: [UInt8] = []

    /// What waiting for the record ended in.
    enum Event {
        case record(String)
        /// The host closed the connection without writing a record.
        case closed
        case timedOut
        /// The extra descriptor given to `waitForRecord` became readable first.
        case watchedReady
    }

    /// Connects, or returns nil when no host listens at `path`.
    init?(path: String) {
        guard let descriptor = SocketClient.connect(path) else { return nil }
        self.path = path
        self.descriptor = descriptor
    }

    /// Connects, or ends the command (status 3) when no host listens, or
    /// when the one listening runs as another user: he would read the
    /// request and could answer it with anything.
    static func open(_ path: String) throws -> HostConnection {
        guard let connection = HostConnection(path: path) else {
            throw Failure.exit("no host is listening on \(path) (start one with: xcallback run --socket \(ShellWord.quoted(path)))", status: 3)
        }
        guard let peer = LocalPeer.uid(of: connection.descriptor), LocalPeer.isTrusted(peer) else {
            let who = LocalPeer.uid(of: connection.descriptor).map { "uid \($0)" } ?? "an unknown user"
            throw Failure.exit("refusing \(path): the process listening there runs as \(who), not as you or root", status: 3)
        }
        return connection
    }

    deinit {
        close(descriptor)
    }

    /// Sends `line` as the connection's only request.
    func sendOnly(_ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        shutdown(descriptor, Int32(SHUT_WR))
        return true
    }

    /// Waits for the first record line, until `deadline` (forever when nil)
    /// or until `watched` becomes readable.
    func waitForRecord(until deadline: ContinuousClock.Instant?, watching watched: Int32? = nil) -> Event {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let newline = received.firstIndex(of: UInt8(ascii: "\n")) {
                return .record(String(decoding: received[..<newline], as: UTF8.self))
            }
            var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
            if let watched { descriptors.append(pollfd(fd: watched, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Self.milliseconds(until: deadline))
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { return .timedOut }
            if descriptors[0].revents != 0 {
                let count = read(descriptor, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    // End of the connection: a last record may lack its newline.
                    return received.isEmpty ? .closed : .record(String(decoding: received, as: UTF8.self))
                }
                received.append(contentsOf: chunk[0..<count])
                continue
            }
            if descriptors.count > 1, descriptors[1].revents != 0 { return .watchedReady }
        }
    }

    private static func milliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let (seconds, attoseconds) = (deadline - .now).components
        guard seconds >= 0 else { return 0 }
        return Int32(min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max)))
    }
}
