import ArgumentParser
import XCallbackHost
import XCallbackURL

#if canImport(Glibc)
import Glibc
#endif

/// `call --via-open URL`: a request to another program, answered through the
/// host. The steps, in this order so that no response can be missed:
///
/// 1. a fresh request ID; URL gets x-success/x-error/x-cancel pointing at
///    `xcallback://x-callback-url/response?requestID=ID&responseType=…`;
/// 2. the host is asked over its socket to `await` that ID;
/// 3. COMMAND (xdg-open) opens the URL; the other program answers by opening
///    one of the callbacks, which reaches the host (through `xcallback send`
///    and the host's FIFO, say);
/// 4. the host answers the await with the response, and `call` prints it.
struct ViaOpenCall {
    let url: String
    let socketPath: String
    let command: String
    let timeoutSeconds: Double

    /// Exit statuses beyond `call`'s 0-3.
    static let timedOutStatus: Int32 = 4
    static let openFailedStatus: Int32 = 5
    /// How long past its own timeout the host may take to say so.
    static let hostAnswerMargin: Duration = .seconds(5)
    /// Bounds the wait for the host once the opener failed.
    static let releaseWait: Duration = .seconds(2)

    func run() throws {
        let id = RequestID.random()
        let request: String
        do {
            request = try Correlation.request(url, answeringTo: id)
        } catch {
            throw Failure.exit(error.message)
        }
        let connection = try HostConnection.open(socketPath)
        guard connection.sendOnly(Correlation.awaitURL(id, timeoutSeconds: timeoutSeconds)) else {
            throw Failure.exit("sending to \(socketPath): \(String(cString: strerror(errno)))", status: 3)
        }
        let opener: LaunchedCommand
        switch OpenCommand.start(command, url: request) {
        case .success(let launched): opener = launched
        case .failure(let failure):
            throw openFailed("cannot run '\(command)': \(failure.message)", id: id, connection: connection)
        }
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeoutSeconds * 1000)) + Self.hostAnswerMargin
        var openerRunning = true
        while true {
            // Without a pidfd, look at the opener every 100 ms.
            let slice = openerRunning && opener.exitDescriptor == nil ? min(deadline, .now + .milliseconds(100)) : deadline
            let event = connection.waitForRecord(until: slice, watching: openerRunning ? opener.exitDescriptor : nil)
            switch event {
            case .record(let record):
                // The other program may go on running (a GUI app xdg-open
                // started in the foreground): it is not waited for.
                try finish(with: record, id: id)
                return
            case .closed:
                throw Failure.exit("the host closed the connection without an outcome", status: 3)
            case .timedOut where ContinuousClock.now >= deadline:
                throw Failure.exit("no response to request \(id) within \(Self.seconds(timeoutSeconds)) s", status: Self.timedOutStatus)
            case .timedOut, .watchedReady:
                guard openerRunning, let status = opener.statusIfExited() else { continue }
                openerRunning = false
                if status != 0 {
                    throw openFailed("'\(command)' exited with status \(status) before a response came", id: id, connection: connection)
                }
            }
        }
    }

    private func finish(with record: String, id: RequestID) throws {
        if Self.isHostTimeout(record) {
            print(record)
            throw Failure.exit("no response to request \(id) within \(Self.seconds(timeoutSeconds)) s", status: Self.timedOutStatus)
        }
        try CallCommand.finish(with: record, request: Correlation.awaitURL(id, timeoutSeconds: timeoutSeconds))
    }

    /// The opener failed: answers the host's await itself (so it does not
    /// linger until its timeout), prints the record that ends it, and fails.
    private func openFailed(_ message: String, id: RequestID, connection: HostConnection) -> ExitCode {
        let response = CallbackURL.appending([
            QueryParameter(name: "errorCode", value: "OpenFailed"),
            QueryParameter(name: "errorMessage", value: message),
            QueryParameter(name: "errorDomain", value: Outcome.hostErrorDomain),
        ], to: Correlation.responseURL(id, .error))
        if let release = HostConnection(path: socketPath), release.sendOnly(response) {
            _ = release.waitForRecord(until: .now + Self.releaseWait)
            if case .record(let record) = connection.waitForRecord(until: .now + Self.releaseWait) {
                print(record)
            }
        }
        return Failure.exit(message, status: Self.openFailedStatus)
    }

    /// The host's own `Timeout` for the await, in either output format.
    static func isHostTimeout(_ record: String) -> Bool {
        if record.hasPrefix("{") {
            return record.contains(#""errorCode":"Timeout""#) && record.contains(#""errorDomain":"xcallback""#)
        }
        return record.hasPrefix("error?") && record.contains("errorCode=Timeout&") && record.hasSuffix("errorDomain=xcallback")
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int64(value)) : String(value)
    }
}
