/// A typed parameter that is missing or does not convert to its declared type.
/// The host reports it as a `ParameterError` outcome with `message` as `errorMessage`.
public struct ParameterError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Problem: Sendable, Equatable {
        case missing
        case invalid(value: String)
    }

    /// The parameter's name, as in the URL.
    public var name: String
    /// What was expected, as a phrase: "a decimal number", "one of water, grass".
    public var expected: String
    public var problem: Problem

    public init(name: String, expected: String, problem: Problem) {
        self.name = name
        self.expected = expected
        self.problem = problem
    }

    /// "missing required parameter 'lhs'" or "parameter 'lhs' must be a
    /// decimal number, got 'abc'": the same words a C or Rust plug-in uses,
    /// so a caller sees one message whatever the plug-in is written in.
    public var message: String {
        switch problem {
        case .missing:
            return "missing required parameter '\(name)'"
        case .invalid(let value):
            return "parameter '\(name)' must be \(expected), got '\(ParameterError.shortened(value))'"
        }
    }

    public var description: String { message }

    /// Values can be up to a line long; a message only needs enough to recognise one.
    static func shortened(_ value: String) -> String {
        let limit = 80
        guard value.count > limit else { return value }
        return String(value.prefix(limit)) + "…"
    }
}
