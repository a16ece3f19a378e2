/// How a request ended, as the `outcome` label says it.
public enum OutcomeClass: Int, Sendable, CaseIterable {
    case success, error, cancel

    public var label: String {
        switch self {
        case .success: "success"
        case .error: "error"
        case .cancel: "cancel"
        }
    }
}

/// The `code` label of an error: one of the SPEC's error codes
/// (docs/usage.md, "Error codes"), or `other` for any code a plug-in chose.
/// A fixed list, so a plug-in's codes can never grow the label set.
public enum ErrorCodeLabel {
    public static let codes: [String] = [
        "InvalidURL", "NotFoundAction", "ParameterError", "Timeout", "PluginCrashed", "SandboxViolation",
        "MemoryLimit", "PluginUnavailable", "ShuttingDown", "Busy", "LoopDetected", "UnknownRequestID",
        "DuplicateRequestID", "OpenFailed", "Abandoned",
    ]
    /// The index of `other`.
    public static let other = codes.count
    /// Every label value: the codes, then `other`.
    public static let count = codes.count + 1

    /// The label index of `code` (`other` for anything not in the list).
    public static func index(of code: String?) -> Int {
        guard let code else { return other }
        return codes.firstIndex(of: code) ?? other
    }

    public static func label(at index: Int) -> String { index < codes.count ? codes[index] : "other" }

    public static let invalidURL = index(of: "InvalidURL")
}
