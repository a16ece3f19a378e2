import ArgumentParser
import XCallbackBridge
import XCallbackHost
import XCallbackWasm

#if canImport(Glibc)
import Glibc
#endif

/// The `xcallback` command, which both binaries are: a plug-in host for
/// x-callback-url actions. Each binary's `@main` type takes its
/// configuration from here, so the two list the same commands.
package enum RootCommand {
    package static func configuration<Edition: CLIEdition>(for edition: Edition.Type) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "xcallback",
            abstract: "Dispatch x-callback-url requests to plug-ins and print one outcome per request.",
            discussion: """
                Reads callback URLs (one per line) from stdin, a FIFO or a Unix socket, routes each \
                to the plug-in that registered it, and writes one outcome record per line.
                """,
            version: XCallbackVersion.current,
            subcommands: [
                RunCommand<Edition>.self, PluginsCommand.self, RoutesCommand.self, CheckCommand.self,
                SendCommand.self, CallCommand.self, SDKCommand.self, NewCommand.self,
                InstallHandlerCommand.self, UninstallHandlerCommand.self, TopCommand.self,
            ] + Edition.queueCommands,
            defaultSubcommand: nil
        )
    }

    /// The host's internal entry points (`__worker`, `__zygote`) are picked
    /// out before parsing: outside the subcommand tree, they never appear in
    /// help, shell completions or the manual page (whose generator lists
    /// hidden subcommands too). Runs the one `arguments` names, then exits;
    /// returns if they name none.
    package static func runInternalCommand(_ arguments: [String]) {
        // Before anything loads a plug-in, here or in a worker: `.wasm`
        // files are plug-ins wherever this binary runs.
        #if Wasm  // the package's Wasm trait: swift build --traits Wasm
        PluginFormats.install(WasmPluginFormat())
        #endif
        switch arguments.first {
        case WorkerMain.subcommand?: WorkerCommand.main(Array(arguments.dropFirst()))
        case WorkerZygote.subcommand?: ZygoteCommand.main(Array(arguments.dropFirst()))
        default: return
        }
        exit(0)
    }
}
