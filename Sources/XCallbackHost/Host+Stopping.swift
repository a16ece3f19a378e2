import CHostSupport
import Logging
import Synchronization
import XCallbackBridge
import XCallbackRouting
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Stopping: a stop request, draining the input, the records still owed,
// and the background work that ends with the host.
extension Host {
    /// Stops reading input; in-flight requests get the grace period. Awaits
    /// end at once, since no response can be read any more.
    public func requestStop() {
        let first = !stopSignal.isRaised
        stopSignal.raise()
        // Logged once raised: whoever reads this line may count on every
        // reader having been told.
        if first {
            logger.info("stop requested: no new request is run; requests in flight get the grace period (\(configuration.gracePeriod))")
        }
        responses.hostIsStopping()
    }

    /// How long after the grace period a stop waits for the input before
    /// it ends the workers in its way.
    static let stuckInputMargin: UInt64 = 1_000_000_000

    /// Waits for every record the loop owes; after a stop request, only for
    /// the grace period, then answers `Timeout` for what is left.
    func drain(_ loop: InputLoop) {
        // After stdout closed, the input left unread is what no one wants.
        let quiet = stoppedByClosedOutput
        if loop.droppedPartialLine && !quiet {
            logger.warning("stopped while a line was still being written; that unterminated line was not run")
        }
        if loop.refusedCount > 0 {
            logger.notice("\(loop.refusedCount) request(s) that arrived after the stop signal were answered ShuttingDown, not run")
        }
        if loop.closedIdle {
            logger.info("closed a socket connection that sent no complete request line for \(configuration.idleTimeout), with none in flight")
        }
        if loop.leftInputUnread && !quiet {
            logger.warning("stopped reading with input still waiting after the grace period; it was not read")
        }
        awaitRecords(loop.lineCount, on: loop.sink)
        loop.sink.flush()
    }

    /// Waits until `sink` has the `owed` records; once a stop is requested
    /// (before this wait or during it), only until the grace period after
    /// the request has passed, then answers `Timeout` for what is left. An
    /// input read to its end (a file, stdin at EOF) must not make a stop
    /// wait for `--timeout` instead.
    func awaitRecords(_ owed: UInt64, on sink: OutputSink) {
        while true {
            guard let raisedAt = stopSignal.raisedAt else {
                if sink.waitForEmitted(owed, deadline: MonotonicClock.now + Self.stopCheckInterval) { return }
                continue
            }
            if !sink.waitForEmitted(owed, deadline: raisedAt + configuration.gracePeriod.nanoseconds) {
                dispatcher.expireAll(stoppedWithGrace: configuration.gracePeriod)
            }
            _ = sink.waitForEmitted(owed, deadline: nil)
            return
        }
    }

    /// How often a wait for records looks for a stop request.
    static let stopCheckInterval: UInt64 = 50_000_000

    func startBackgroundWork() {
        watchdog.start()
        responses.start()
    }

    func finishBackgroundWork() {
        responses.stopTimer()
        opener?.drain()
        watchdog.stop()
        dispatcher.stop()
        stopPlugins()
    }
}
