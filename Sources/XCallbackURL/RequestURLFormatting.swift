// Turning components back into a line. Everything but the scheme and the
// fragment is percent-encoded, so the result parses back to the same components.

extension RequestURL: CustomStringConvertible {
    /// A URL that parses back to these components: `scheme://host/segments?parameters#fragment`,
    /// or `scheme:segments?…` when `host` is empty. Action parameters come first, then
    /// `x-source`, `x-success`, `x-error`, `x-cancel`.
    public var urlString: String {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        appendURL(to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    public var description: String { urlString }

    /// Appends the bytes of `urlString` to `output`.
    public func appendURL(to output: inout [UInt8]) {
        output.append(contentsOf: scheme.utf8)
        output.append(ASCII.colon)
        if !host.isEmpty {
            output.append(ASCII.slash)
            output.append(ASCII.slash)
            PercentEncoding.encode(host, into: &output)
            for segment in pathSegments {
                output.append(ASCII.slash)
                PercentEncoding.encode(segment, into: &output)
            }
        } else {
            for (index, segment) in pathSegments.enumerated() {
                if index > 0 { output.append(ASCII.slash) }
                PercentEncoding.encode(segment, into: &output)
            }
        }
        var query = parameters.items
        if let source { query.append(QueryParameter(name: "x-source", value: source)) }
        if let successURL { query.append(QueryParameter(name: "x-success", value: successURL)) }
        if let errorURL { query.append(QueryParameter(name: "x-error", value: errorURL)) }
        if let cancelURL { query.append(QueryParameter(name: "x-cancel", value: cancelURL)) }
        if !query.isEmpty {
            output.append(ASCII.question)
            CallbackURL.appendQuery(query, to: &output)
        }
        if let fragment {
            output.append(ASCII.hash)
            output.append(contentsOf: fragment.utf8)
        }
    }
}
