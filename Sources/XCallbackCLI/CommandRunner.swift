import ArgumentParser
import XCallbackRouting

#if canImport(Glibc)
import Glibc
#endif

/// Parses and runs a command with one error style: every error is
/// `xcallback: MESSAGE` on stderr, ArgumentParser's usage errors included
/// (exit 64), as `Failure.exit` writes the commands' own (exit 1). Help and
/// `--version` print as ArgumentParser prints them. `Root` is the binary's
/// root command.
package enum CommandRunner<Root: ParsableCommand> {
    package static func run(_ arguments: [String]) -> Never {
        if let unknown = unknownSubcommand(in: arguments) {
            usageError(unknown, hint: nil)
        }
        var command: ParsableCommand
        do {
            command = try Root.parseAsRoot(arguments)
        } catch {
            fail(error)
        }
        do {
            try command.run()
        } catch {
            fail(error)
        }
        // A run stopped by Ctrl-C reports it, as shells expect of an
        // interrupted program (SIGTERM is a requested stop: 0).
        if SignalWaiter.stoppedByInterrupt { exit(130) }
        exit(RunStatus.inputFailed.load(ordering: .acquiring) ? 1 : 0)
    }

    /// `xcallback rnu …`: ArgumentParser would say "Unexpected argument";
    /// this names the command meant, when one is close.
    static func unknownSubcommand(in arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let names = Root.configuration.subcommands.map { $0._commandName }
        guard !names.contains(first), first != "help" else { return nil }
        let typed = Array(first), limit = min(2, max(1, first.count / 3))
        var distance = EditDistance()
        let closest = names.compactMap { name in distance.between(typed, Array(name), atMost: limit).map { (name: name, distance: $0) } }
            .min { $0.distance < $1.distance }
        if let closest {
            return "unknown command '\(first)'; did you mean '\(closest.name)'?"
        }
        return "unknown command '\(first)'; the commands are \(names.joined(separator: ", "))"
    }

    /// Ends with ArgumentParser's verdict on `error`, in our style.
    static func fail(_ error: Error) -> Never {
        let code = Root.exitCode(for: error)
        // Help, --version, and ExitCode thrown by a command (whose message,
        // if any, is already written): ArgumentParser's own handling.
        if code == .success || error is ExitCode {
            Root.exit(withError: error)
        }
        let message = oneLine(Root.message(for: error))
        if code == .validationFailure {
            usageError(message, hint: helpHint(for: error))
        }
        _ = Failure.exit(message, status: code.rawValue)
        exit(code.rawValue)
    }

    private static func usageError(_ message: String, hint: String?) -> Never {
        _ = Failure.exit(message + (hint.map { " (see '\($0)')" } ?? ""), status: ExitCode.validationFailure.rawValue)
        exit(ExitCode.validationFailure.rawValue)
    }

    /// "xcallback run --help", from ArgumentParser's "See '…' for more information."
    private static func helpHint(for error: Error) -> String? {
        let full = Root.fullMessage(for: error, columns: 10_000)
        guard let start = full.range(of: "See '"),
              let end = full[start.upperBound...].firstIndex(of: "'") else { return nil }
        return String(full[start.upperBound..<end])
    }

    /// ArgumentParser's lists of valid values ("one of the following:\n  - a\n  - b") on one line.
    static func oneLine(_ message: String) -> String {
        let lines = message.split(separator: "\n", omittingEmptySubsequences: true).map {
            $0.trimmingPrefix(while: { $0 == " " })
        }
        var result = ""
        for line in lines {
            if line.hasPrefix("- ") {
                result += (result.hasSuffix(":") ? " " : ", ") + line.dropFirst(2)
            } else {
                result += (result.isEmpty ? "" : " ") + line
            }
        }
        if result.hasPrefix("Error: ") { result.removeFirst(7) }
        return result
    }
}
