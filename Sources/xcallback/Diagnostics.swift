import Logging

/// stderr diagnostics: stdout carries outcome records and nothing else.
enum Diagnostics {
    static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    static let logger = Logger(label: "xcallback")
}
