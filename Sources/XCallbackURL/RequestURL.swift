/// One parsed request line: `scheme://host/path?query#fragment` (or `scheme:path?query`).
///
/// Components are percent-decoded, except `fragment`. The x-callback-url
/// parameters `x-source`, `x-success`, `x-error` and `x-cancel` are split out
/// of `parameters`; each keeps its first occurrence.
public struct RequestURL: Sendable, Equatable, Hashable {
    /// Lowercased.
    public var scheme: String
    /// Percent-decoded authority, as written (user info and port are not split off),
    /// except that any spelling of `x-callback-url` becomes `x-callback-url`.
    /// Empty for `scheme:path` URLs.
    public var host: String
    /// Percent-decoded path segments; empty segments are dropped (`a//b/` is `["a", "b"]`).
    public var pathSegments: [String]
    /// Action parameters only, in order, repeated names kept.
    public var parameters: QueryParameters
    /// `x-source`: the name of the calling program.
    public var source: String?
    /// `x-success`: where a success outcome goes.
    public var successURL: String?
    /// `x-error`: where an error outcome goes.
    public var errorURL: String?
    /// `x-cancel`: where a cancel outcome goes.
    public var cancelURL: String?
    /// The raw text after the first `#`, not decoded; nil when there is no `#`.
    public var fragment: String?

    /// The x-callback-url host, as the spec writes it.
    public static let xCallbackHost = "x-callback-url"

    public var isXCallbackURL: Bool { host == RequestURL.xCallbackHost }

    public init(
        scheme: String, host: String = "", pathSegments: [String] = [], parameters: QueryParameters = [],
        source: String? = nil, successURL: String? = nil, errorURL: String? = nil, cancelURL: String? = nil,
        fragment: String? = nil
    ) {
        self.scheme = scheme
        self.host = host
        self.pathSegments = pathSegments
        self.parameters = parameters
        self.source = source
        self.successURL = successURL
        self.errorURL = errorURL
        self.cancelURL = cancelURL
        self.fragment = fragment
    }

    /// Parses one request line (already stripped of its line ending and surrounding blanks).
    public init(parsing line: String, limits: ParseLimits = .default) throws(URLParseError) {
        let count = line.utf8.count
        if count > limits.maxLineBytes { throw .tooLong(count: count, limit: limits.maxLineBytes) }
        var line = line
        // Parsed in place: a RequestURL handed back through withUTF8's generic
        // result, or a captured self, is copied (every field retained, then released).
        var url = RequestURL(scheme: "")
        var failure: URLParseError?
        line.withUTF8 { bytes in
            do throws(URLParseError) {
                // A String is valid UTF-8 by construction: only NUL needs checking.
                try RequestURLParser.parse(bytes, isKnownValidUTF8: true, into: &url)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        self = consume url
    }

    /// Parses one request line from raw bytes, validating them as UTF-8.
    public init(parsing bytes: UnsafeBufferPointer<UInt8>, limits: ParseLimits = .default) throws(URLParseError) {
        if bytes.count > limits.maxLineBytes { throw .tooLong(count: bytes.count, limit: limits.maxLineBytes) }
        self.init(scheme: "")
        try RequestURLParser.parse(bytes, isKnownValidUTF8: false, into: &self)
    }

    /// The callback URL the request gave for `kind`; nil when it gave none or an empty one.
    public func callbackURL(for kind: OutcomeKind) -> String? {
        kind.callback(success: successURL, error: errorURL, cancel: cancelURL)
    }
}
