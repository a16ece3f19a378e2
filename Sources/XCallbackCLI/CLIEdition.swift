import ArgumentParser
import XCallbackHost
import XCallbackSystem

/// What the two binaries built on this command line do differently.
/// `xcallback` carries no database client, so it cannot consume the queue;
/// `xcallback-queue` can, and starts its workers from `xcallback` beside it
/// (QueueHandover.swift). Each binary's main names its edition, and what
/// differs is generic over it (`RunCommand`, `RootCommand.configuration`).
package protocol CLIEdition {
    /// `queue`, `enqueue` and `outcomes`, as this binary has them.
    static var queueCommands: [any ParsableCommand.Type] { get }

    /// The executable the host starts its workers and probes from.
    static var workerExecutable: String { get }

    /// `run --queue URL`, once the host has loaded its plug-ins.
    static func runQueue(_ url: String, for run: RunCommand<Self>, host: Host, signals: SignalWaiter,
                         records: Int32, format: LogFormat) throws
}
