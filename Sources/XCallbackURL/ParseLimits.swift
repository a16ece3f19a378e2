/// Bounds the parser enforces before it looks at a line's content.
public struct ParseLimits: Sendable, Equatable {
    /// Longest accepted line, in bytes (SPEC section 3: 64 KiB by default).
    public var maxLineBytes: Int

    public init(maxLineBytes: Int = 65_536) {
        self.maxLineBytes = maxLineBytes
    }

    public static let `default` = ParseLimits()
}
