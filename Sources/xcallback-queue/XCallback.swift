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
        Allocator.keepFreedMemory()
        let arguments = Array(CommandLine.arguments.dropFirst())
        // Read; now out of sight of `ps`.
        CommandLinePasswords.scrub()
        RootCommand.runInternalCommand(arguments)
        CommandRunner<Self>.run(arguments)
    }
}
