import ArgumentParser
import XCallbackCLI
import XCallbackHost
import XCallbackSystem

/// The `xcallback` command: a plug-in host for x-callback-url actions
/// (XCallbackCLI). It carries no database client: it hands the queue's
/// commands to `xcallback-queue`.
@main
struct XCallback: ParsableCommand {
    static let configuration = RootCommand.configuration(for: LeanEdition.self)

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `run` blocks its stop signals before main (early_signals.c); here where that did not run.
        SignalWaiter.blockEarly(for: arguments)
        Allocator.keepFreedMemory()
        RootCommand.runInternalCommand(arguments)
        if QueueHandover.isQueueCommand(arguments) { QueueHandover.execQueueBinary() }
        CommandRunner<Self>.run(arguments)
    }
}

/// `xcallback`'s edition: stand-ins for the queue's commands
/// (QueueCommandStubs.swift), and workers started from this executable.
enum LeanEdition: CLIEdition {
    static var queueCommands: [any ParsableCommand.Type] {
        [QueueCommand.self, EnqueueCommand.self, OutcomesCommand.self]
    }

    static var workerExecutable: String { Environment.executable }

    /// `main` hands `run --queue` over before it gets here.
    static func runQueue(_ url: String, for run: RunCommand<Self>, host: Host, signals: SignalWaiter,
                         records: Int32, format: LogFormat) throws {
        throw Failure.exit("--queue is run by xcallback-queue, which xcallback hands it to before it starts")
    }
}
