/// One `name=value` pair, both percent-decoded.
public struct QueryParameter: Sendable, Equatable, Hashable {
    public var name: String
    public var value: String

    @inlinable
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    @inlinable
    public init(_ name: String, _ value: String) {
        self.init(name: name, value: value)
    }
}
