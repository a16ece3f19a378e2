/// One route that matches a request, with the values its arguments bound.
public struct RouteMatch<Value: Sendable>: Sendable {
    /// The pattern that matched, as registered.
    public var pattern: RoutePattern
    /// The value registered with the pattern.
    public var value: Value
    /// `:name` arguments in pattern order, then `"*"` (the remaining segments joined with
    /// `/`, possibly empty) when the matching alternative ends in a wildcard. Arguments of
    /// optional groups that were absent from the request are not listed.
    public var arguments: [(name: String, value: String)]

    public init(pattern: RoutePattern, value: Value, arguments: [(name: String, value: String)]) {
        self.pattern = pattern
        self.value = value
        self.arguments = arguments
    }

    /// The value bound to `name` (`"*"` for the wildcard), or nil when the request did not bind it.
    public func argument(_ name: String) -> String? {
        for argument in arguments where argument.name == name { return argument.value }
        return nil
    }
}
