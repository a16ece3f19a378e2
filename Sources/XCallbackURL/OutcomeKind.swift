/// The three ways a request can end.
public enum OutcomeKind: String, Sendable, Equatable, Hashable, CaseIterable {
    case success
    case error
    case cancel
}

extension OutcomeKind {
    /// The callback an outcome of this kind goes to, of a request's three
    /// (`x-success`, `x-error`, `x-cancel`); an empty one is none. The one
    /// copy of the rule, for decoded Strings and for a lane's bytes alike.
    @inlinable
    public func callback<URL: Collection>(success: URL?, error: URL?, cancel: URL?) -> URL? {
        let url: URL?
        switch self {
        case .success: url = success
        case .error: url = error
        case .cancel: url = cancel
        }
        guard let url, !url.isEmpty else { return nil }
        return url
    }
}
