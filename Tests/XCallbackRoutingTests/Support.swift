@testable import XCallbackRouting

/// Builds a table whose values are the pattern texts, so expectations can name routes by text.
func makeTable(_ patterns: [String]) throws -> RouteTable<String> {
    var table = RouteTable<String>()
    for text in patterns {
        table.insert(try RoutePattern(text), value: text)
    }
    return table
}

/// Splits "scheme://host/a/b" into the pieces the URL parser would hand the table.
func request(_ url: String) -> (scheme: String, host: String, path: [String]) {
    let schemeEnd = url.firstRange(of: "://")!
    let scheme = String(url[..<schemeEnd.lowerBound])
    let parts = url[schemeEnd.upperBound...].split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    return (scheme, parts[0], Array(parts.dropFirst()))
}

extension RouteTable where Value == String {
    /// Pattern texts of every candidate for `url`, best first.
    func candidates(_ url: String) -> [String] {
        let r = request(url)
        return matches(scheme: r.scheme, host: r.host, path: r.path).map(\.value)
    }

    func first(_ url: String) -> RouteMatch<String>? {
        let r = request(url)
        return firstMatch(scheme: r.scheme, host: r.host, path: r.path)
    }
}

/// Arguments as "name=value" strings, for compact expectations.
func bound<Value>(_ match: RouteMatch<Value>?) -> [String] {
    match?.arguments.map { "\($0.name)=\($0.value)" } ?? []
}
