#if Queue  // the package's Queue trait: swift build --traits Queue
import XCallbackURL

enum QueryParameterFixture {
    static func make(_ name: String, _ value: String) -> QueryParameter { QueryParameter(name: name, value: value) }
}
#endif
