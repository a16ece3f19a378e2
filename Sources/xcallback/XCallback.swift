import ArgumentParser
import XCallbackHost

/// The `xcallback` command: a plug-in host for x-callback-url actions.
@main
struct XCallback: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "xcallback",
        abstract: "Dispatch x-callback-url requests to plug-ins and print one outcome per request.",
        discussion: """
            Reads callback URLs (one per line) from stdin, a FIFO or a Unix socket, routes each \
            to the plug-in that registered it, and writes one outcome record per line.
            """,
        version: XCallbackVersion.current,
        subcommands: [
            RunCommand.self, PluginsCommand.self, RoutesCommand.self, CheckCommand.self,
            SendCommand.self, CallCommand.self, SDKCommand.self, NewCommand.self,
            InstallHandlerCommand.self, UninstallHandlerCommand.self,
            QueueCommand.self, EnqueueCommand.self, OutcomesCommand.self,
        ],
        defaultSubcommand: nil
    )

    /// The host's internal entry points (`__worker`, `__probe`, `__zygote`) are picked
    /// out before parsing: outside the subcommand tree, they never appear in
    /// help, shell completions or the manual page (whose generator lists
    /// hidden subcommands too).
    static func main() {
        Allocator.keepFreedMemory()
        let arguments = CommandLine.arguments.dropFirst()
        switch arguments.first {
        case WorkerMain.subcommand?: WorkerCommand.main(Array(arguments.dropFirst()))
        case PluginProbe.subcommand?: ProbeCommand.main(Array(arguments.dropFirst()))
        case WorkerZygote.subcommand?: ZygoteCommand.main(Array(arguments.dropFirst()))
        default:
            #if !XCALLBACK_QUEUE
            if QueueHandover.isQueueCommand(Array(arguments)) { QueueHandover.execQueueBinary() }
            #endif
            CommandRunner.run(Array(arguments))
        }
    }
}
