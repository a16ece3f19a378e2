/// Why the host itself cannot start: bad flags or an unusable directory.
/// The CLI turns these into a message and a non-zero exit.
public struct HostSetupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
