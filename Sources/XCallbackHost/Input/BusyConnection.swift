import XCallbackSystem
import XCallbackURL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A socket connection past the host's caps: answered at once with one
/// `Busy` record and closed, never left waiting unanswered in the backlog.
enum BusyConnection {
    static func answer(_ connection: Int32, reason: String, format: OutputFormat) {
        var bytes: [UInt8] = []
        format.write(OutcomeRecord(sequence: 0, input: "", outcome: HostError.busy(reason), callback: nil), to: &bytes)
        // Written without blocking: a client that does not read it only
        // loses its own answer.
        _ = send(connection, bytes, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        // What it sent is read and dropped first: closing with unread bytes
        // would reset the connection and lose the record.
        shutdown(connection, Int32(SHUT_WR))
        var discard = [UInt8](repeating: 0, count: 4096)
        while recv(connection, &discard, discard.count, Int32(MSG_DONTWAIT)) > 0 {}
        close(connection)
    }
}
