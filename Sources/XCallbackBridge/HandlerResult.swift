import XCallbackURL

/// What one handler call came to: an outcome, or "not for me" (decline),
/// after which the dispatcher tries the next matching route.
public enum HandlerResult: Sendable, Equatable {
    case outcome(Outcome)
    case declined
}
