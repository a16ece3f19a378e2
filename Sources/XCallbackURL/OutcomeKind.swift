/// The three ways a request can end.
public enum OutcomeKind: String, Sendable, Equatable, Hashable, CaseIterable {
    case success
    case error
    case cancel
}
