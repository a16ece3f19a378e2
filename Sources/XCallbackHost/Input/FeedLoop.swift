import Synchronization
import XCallbackMetrics
import XCallbackSystem

/// Serves a `RequestFeed`: each request is dispatched as a line read from
/// a stream would be, on the same handoff threads, and its one record goes
/// to a `RecordReceiver` instead of an output.
extension Host {
    /// Dispatches every request of `feed` until it ends, then waits for
    /// their records (after a stop, only for the grace period, then
    /// `Timeout`) and returns. Plug-in files are watched meanwhile, as for a
    /// FIFO or a socket.
    public func serve(feed: some RequestFeed, receiver: some RecordReceiver) {
        let watcher = DirectoryWatcher(directories: configuration.pluginDirectories, stop: stopSignal, logger: logger)
        startBackgroundWork()
        watchPlugins(with: watcher)
        let counts = metrics?.input(.queue)
        let sink = OutputSink(receiver: receiver, format: configuration.output, tally: tally, input: counts)
        let submitted = sink.stream.lines
        let loop = HandoffLoop<FedRequest>(
            read: {
                BatchingThread.flushDeferred()
                return feed.next()
            },
            process: { [dispatcher] request in
                submitted.value.add(1, ordering: .relaxed)
                counts?.bytes.add(UInt64(request.line.count))
                request.line.withUnsafeBufferPointer { line in
                    dispatcher.submit(line: line, sequence: request.id, sink: sink,
                                      identity: RequestIdentity(id: request.id, attempt: request.attempt))
                }
            },
            watchdog: watchdog)
        loop.start()
        loop.waitUntilInputEnds()
        awaitRecords(submitted.value.load(ordering: .acquiring), on: sink)
        finishBackgroundWork()
    }

    /// Opens a recorded request's callback with `--open COMMAND`; false when
    /// there is no command, no callback, or its scheme is refused (then the
    /// caller writes the record instead, as `run` does).
    public func openCallback(of record: OutcomeRecord) -> Bool {
        guard let opener, let url = record.resolvedCallback, opener.allows(url) else { return false }
        opener.open(url)
        return true
    }
}

/// The number and attempt a request carries when the caller gives them
/// (`request_id`, `request_attempt`); a line from a stream gets the host's
/// next number and attempt 1.
struct RequestIdentity: Sendable {
    var id: UInt64
    var attempt: UInt32
}
