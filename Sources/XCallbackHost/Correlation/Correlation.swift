import XCallbackBridge
import XCallbackRouting
import XCallbackURL

/// Client correlation, as InterAppCommunication's client and CallbackURLKit
/// do it: a request sent to another program carries callbacks that point back
/// at this host's own scheme with a request ID and a response type, and the
/// host pairs the callback that comes back with the client waiting for it.
///
/// - `xcallback://x-callback-url/await?requestID=ID[&timeout=SECONDS]` waits
///   until the response for `ID` arrives; its outcome is the response's.
/// - `xcallback://x-callback-url/response?requestID=ID&responseType=success|error|cancel&…`
///   is the callback the other program opens; every parameter after the two
///   the host put there is the other program's answer.
public enum Correlation {
    /// The host's own scheme: its routes are built in, and plug-ins cannot
    /// register routes on it.
    public static let scheme = HostScheme.name
    public static let requestIDParameter = "requestID"
    public static let responseTypeParameter = "responseType"
    public static let timeoutParameter = "timeout"
    /// The `x-source` added to a request that does not name its sender.
    public static let source = "xcallback"
    /// An await's timeout when it names none, in seconds: long enough for a
    /// person to answer a dialog in the other program.
    public static let defaultTimeoutSeconds = 300.0
    /// The longest timeout an await may ask for: an await holds its caller,
    /// and on stdin the whole run, that long.
    public static let maxTimeoutSeconds = 3_600.0

    static let awaitPattern = builtIn("await")
    static let responsePattern = builtIn("response")
    /// The routes every host answers itself, before any plug-in's.
    public static let builtInRoutes = [awaitPattern, responsePattern]

    private static func builtIn(_ action: String) -> RoutePattern {
        do {
            return try RoutePattern.action(scheme: scheme, action: action)
        } catch {
            preconditionFailure("built-in route \(action): \(error)")
        }
    }

    /// The line a client sends the host to wait for `id`'s response.
    public static func awaitURL(_ id: RequestID, timeoutSeconds: Double) -> String {
        CallbackURL.appending([
            QueryParameter(name: requestIDParameter, value: id.text),
            QueryParameter(name: timeoutParameter, value: decimal(timeoutSeconds)),
        ], to: "\(scheme)://x-callback-url/await")
    }

    /// The callback URL the other program opens to answer `id` with `kind`.
    public static func responseURL(_ id: RequestID, _ kind: OutcomeKind) -> String {
        CallbackURL.appending([
            QueryParameter(name: requestIDParameter, value: id.text),
            QueryParameter(name: responseTypeParameter, value: kind.rawValue),
        ], to: "\(scheme)://x-callback-url/response")
    }

    /// `url` with `x-success`, `x-error` and `x-cancel` pointing at this
    /// host's `response` action for `id`, and `x-source=xcallback` unless
    /// it names its sender. The URL's own text is kept byte for byte; the
    /// parameters go before any `#fragment`.
    public static func request(_ url: String, answeringTo id: RequestID) throws(CorrelationError) -> String {
        let parsed: RequestURL
        do {
            parsed = try RequestURL(parsing: url)
        } catch {
            throw CorrelationError("not a URL the host can read: \(error.message)")
        }
        let named = [("x-success", parsed.successURL), ("x-error", parsed.errorURL), ("x-cancel", parsed.cancelURL)]
            .filter { $0.1 != nil }.map(\.0)
        guard named.isEmpty else {
            throw CorrelationError(
                "the URL already names \(named.joined(separator: ", ")); --via-open adds its own callbacks so the answer comes back to this host")
        }
        var parameters: [QueryParameter] = []
        if parsed.source == nil { parameters.append(QueryParameter(name: "x-source", value: source)) }
        parameters.append(QueryParameter(name: "x-success", value: responseURL(id, .success)))
        parameters.append(QueryParameter(name: "x-error", value: responseURL(id, .error)))
        parameters.append(QueryParameter(name: "x-cancel", value: responseURL(id, .cancel)))
        return CallbackURL.appending(parameters, to: url)
    }

    /// Seconds as a short decimal: `300`, `0.5`.
    static func decimal(_ seconds: Double) -> String {
        if seconds == seconds.rounded(), abs(seconds) < 1e15 { return String(Int64(seconds)) }
        return String(seconds)
    }
}

/// Why a URL cannot be sent with `call --via-open`.
public struct CorrelationError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
