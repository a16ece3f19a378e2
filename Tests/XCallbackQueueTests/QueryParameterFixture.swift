import XCallbackURL

enum QueryParameterFixture {
    static func make(_ name: String, _ value: String) -> QueryParameter { QueryParameter(name: name, value: value) }
}
