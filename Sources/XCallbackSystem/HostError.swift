import XCallbackURL

/// The errors the host itself gives (`errorDomain=xcallback`), docs/usage.md ("Error codes").
public enum HostError {
    public static let domain = Outcome.hostErrorDomain

    public static func invalidURL(_ message: String) -> Outcome {
        .error(code: "InvalidURL", message: message, domain: domain)
    }

    public static func notFound(_ message: String) -> Outcome {
        .error(code: "NotFoundAction", message: message, domain: domain)
    }

    public static func parameter(_ message: String) -> Outcome {
        .error(code: "ParameterError", message: message, domain: domain)
    }

    public static func crashed(_ message: String) -> Outcome {
        .error(code: "PluginCrashed", message: message, domain: domain)
    }

    /// The sandbox ended the worker for a forbidden system call.
    public static func sandboxViolation(_ message: String) -> Outcome {
        .error(code: "SandboxViolation", message: message, domain: domain)
    }

    /// The worker died at its memory ceiling (the `memory` capability).
    public static func memoryLimit(_ message: String) -> Outcome {
        .error(code: "MemoryLimit", message: message, domain: domain)
    }

    public static func timeout(_ message: String) -> Outcome {
        .error(code: "Timeout", message: message, domain: domain)
    }

    public static func unavailable(_ message: String) -> Outcome {
        .error(code: "PluginUnavailable", message: message, domain: domain)
    }

    /// A socket connection past the host's caps: answered at once, not queued.
    public static func busy(_ message: String) -> Outcome {
        .error(code: "Busy", message: message, domain: domain)
    }

    /// A line that arrived after SIGINT/SIGTERM: answered, never run.
    public static func shuttingDown(_ message: String) -> Outcome {
        .error(code: "ShuttingDown", message: message, domain: domain)
    }

    public static func loopDetected(_ message: String) -> Outcome {
        .error(code: "LoopDetected", message: message, domain: domain)
    }

    /// A `response` no `await` is waiting for (client correlation).
    public static func unknownRequestID(_ message: String) -> Outcome {
        .error(code: "UnknownRequestID", message: message, domain: domain)
    }

    /// An `await` for an ID another `await` is already waiting for.
    public static func duplicateRequestID(_ message: String) -> Outcome {
        .error(code: "DuplicateRequestID", message: message, domain: domain)
    }
}
