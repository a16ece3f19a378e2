import ArgumentParser
import Logging
import XCallbackHost
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#endif

/// stderr diagnostics: stdout carries outcome records and nothing else.
package enum Diagnostics {
    /// Every line the command writes to stderr goes through it, so log
    /// lines, the summary and the progress line never garble each other.
    package static let console = DiagnosticConsole(descriptor: 2)

    package static func bootstrap(level: Logger.Level, format: LogFormat = .text) {
        LoggingSystem.bootstrap { label in
            format.handler(label: label, level: level, console: console)
        }
    }

    /// A worker's or the zygote's logging: plain lines on its stderr, which
    /// the host relays into its own log (`WorkerOutputRelay`).
    static func bootstrapWorker(level: Logger.Level) {
        LoggingSystem.bootstrap { _ in WorkerLogHandler(level: level, console: console) }
    }

    package static let logger = Logger(label: "xcallback")

    /// Writes the outcome summary line (at exit, or for SIGUSR1).
    package static func writeSummary(_ counts: OutcomeCounts, format: LogFormat, final: Bool) {
        console.write(format.summaryLine(counts, final: final))
    }
}

enum LogFormatArgument: String, ExpressibleByArgument, CaseIterable {
    case text, json
    var value: LogFormat { LogFormat(rawValue: rawValue)! }
}
