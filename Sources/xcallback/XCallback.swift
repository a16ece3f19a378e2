import ArgumentParser

/// The `xcallback` command: a plug-in host for x-callback-url actions.
@main
struct XCallback: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "xcallback",
        abstract: "Dispatch x-callback-url requests to plug-ins and print one outcome per request.",
        discussion: """
            Reads callback URLs (one per line) from stdin, a FIFO or a Unix socket, routes each
            to the plug-in that registered it, and writes one outcome record per line.
            """,
        subcommands: [
            RunCommand.self, PluginsCommand.self, RoutesCommand.self, CheckCommand.self,
            SendCommand.self, CallCommand.self, SDKCommand.self, ProbeCommand.self, WorkerCommand.self,
        ],
        defaultSubcommand: nil
    )
}
