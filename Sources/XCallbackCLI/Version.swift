/// The version `xcallback --version` prints: the one place it is named.
enum XCallbackVersion {
    static let current = "0.9.0"
}
