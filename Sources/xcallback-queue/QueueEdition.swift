#if Queue  // the package's Queue trait: swift build --traits Queue
import ArgumentParser
import XCallbackCLI
import XCallbackHost
import XCallbackQueue
import XCallbackSystem

/// `xcallback-queue`'s edition: the queue's commands (QueueCommands.swift),
/// `run --queue`, and workers started from the lean `xcallback`.
enum QueueEdition: CLIEdition {
    static var queueCommands: [any ParsableCommand.Type] {
        [QueueCommand.self, EnqueueCommand.self, OutcomesCommand.self]
    }

    /// Workers run the lean `xcallback` beside this executable when it is
    /// there, else this one.
    static var workerExecutable: String { QueueHandover.leanExecutable ?? Environment.executable }

    /// `run --queue`: the host consumes the queue until SIGINT/SIGTERM.
    static func runQueue(_ url: String, for run: RunCommand<Self>, host: Host, signals: SignalWaiter,
                         records: Int32, format: LogFormat) throws {
        let location: QueueLocation
        do { location = try QueueLocation(parsing: url) } catch { throw Failure.exit(error.message) }
        var options = QueueConsumerOptions()
        options.lease = .milliseconds(Int64(run.lease * 1000))
        options.batchSize = run.batchSize
        options.maxInFlight = max(run.batchSize * 8, 1_024)
        options.retention = .milliseconds(Int64(run.retention * 1000))
        options.shutdownRecordingLimit = .milliseconds(Int64(run.databaseStopTimeout * 1000))
        options.waitForDatabase = .milliseconds(Int64(run.waitForDatabase * 1000))
        let consumer = QueueConsumer(location: location, options: options, host: host, format: run.output.value,
                                     output: records, logger: Diagnostics.logger)
        signals.start(
            onStop: {
                host.requestStop()
                consumer.stop()
            },
            onReload: { host.rescan() },
            onReport: { Diagnostics.writeSummary(host.outcomes, format: format, final: false) })
        do {
            try consumer.run()
        } catch {
            throw Failure.exit(error.message)
        }
        if !run.noSummary { Diagnostics.writeSummary(host.outcomes, format: format, final: true) }
    }
}
#endif
