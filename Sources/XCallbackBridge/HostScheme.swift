/// The scheme the host keeps for itself: its built-in routes answer there
/// (client correlation's `await` and `response`), and no plug-in may
/// register a route on it.
public enum HostScheme {
    public static let name = "xcallback"
}
