/// What a request ended in, with its output parameters in order.
public struct Outcome: Sendable, Equatable, Hashable {
    public var kind: OutcomeKind
    public var parameters: [QueryParameter]

    /// `errorDomain` of the errors the host itself reports (docs/usage.md, "Error codes").
    public static let hostErrorDomain = "xcallback"

    public init(kind: OutcomeKind, parameters: [QueryParameter] = []) {
        self.kind = kind
        self.parameters = parameters
    }

    public static func success(_ parameters: [QueryParameter] = []) -> Outcome {
        Outcome(kind: .success, parameters: parameters)
    }

    /// An error outcome: parameters `errorCode`, `errorMessage`, `errorDomain`, in that order.
    public static func error(code: String, message: String, domain: String) -> Outcome {
        Outcome(kind: .error, parameters: [
            QueryParameter(name: "errorCode", value: code),
            QueryParameter(name: "errorMessage", value: message),
            QueryParameter(name: "errorDomain", value: domain),
        ])
    }

    public static let cancel = Outcome(kind: .cancel)

    /// The host's `InvalidURL` error for a line that did not parse.
    public static func invalidURL(_ error: URLParseError) -> Outcome {
        .error(code: "InvalidURL", message: error.message, domain: hostErrorDomain)
    }

    /// The host's `ParameterError` for a parameter that is missing or does not convert.
    public static func parameterError(_ error: ParameterError) -> Outcome {
        .error(code: "ParameterError", message: error.message, domain: hostErrorDomain)
    }

    /// The first value of the outcome parameter `name`.
    public func value(_ name: String) -> String? {
        for parameter in parameters where parameter.name.hasSameUTF8(as: name) { return parameter.value }
        return nil
    }

    /// The `url` output line (docs/usage.md, "Error codes"): `callback` with the outcome parameters
    /// appended, or, when there is no callback (nil or empty), the outcome name
    /// and its parameters: `success?result=6.2`, `error?errorCode=…`, `cancel`.
    public func line(callback: String?) -> String {
        if let callback, !callback.isEmpty {
            return CallbackURL.appending(parameters, to: callback)
        }
        var output: [UInt8] = []
        appendLine(callback: nil, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the bytes of `line(callback:)` to `output`, without a newline.
    public func appendLine(callback: String?, to output: inout [UInt8]) {
        if let callback, !callback.isEmpty {
            CallbackURL.append(parameters, to: callback, into: &output)
            return
        }
        let name: StaticString
        switch kind {
        case .success: name = "success"
        case .error: name = "error"
        case .cancel: name = "cancel"
        }
        CallbackURL.write(
            prefix: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), parameters: parameters,
            as: .word, into: &output)
    }
}
