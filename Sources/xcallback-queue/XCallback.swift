#if Queue
import ArgumentParser
import XCallbackCLI
import XCallbackHost
import XCallbackQueue
import XCallbackSystem

/// The `xcallback-queue` command: the command line of `xcallback`
/// (XCallbackCLI) with the durable queue's commands (QueueCommands.swift),
/// which `xcallback` hands to it.
@main
struct XCallback: ParsableCommand {
    static let configuration = RootCommand.configuration(for: QueueEdition.self)

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `run` blocks its stop signals before main (early_signals.c); here where that did not run.
        SignalWaiter.blockEarly(for: arguments)
        Allocator.keepFreedMemory()
        // Read; now out of sight of `ps`.
        CommandLinePasswords.scrub()
        RootCommand.runInternalCommand(arguments)
        CommandRunner<Self>.run(arguments)
    }
}
#else
#if canImport(Glibc)
import Glibc
#endif

/// Built without the package's Queue trait: no database client, and a
/// command that says how to get one (`xcallback` hands the queue's commands
/// here).
@main
struct XCallback {
    static func main() {
        let message = "xcallback: this build has no durable queue; build it with `swift build --traits Queue` (docs/queue.md)\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
}
#endif
