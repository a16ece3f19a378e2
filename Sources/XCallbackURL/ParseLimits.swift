/// Bounds the parser enforces before it looks at a line's content.
public struct ParseLimits: Sendable, Equatable {
    /// Longest accepted line, in bytes (64 KiB by default; docs/usage.md, "run").
    public var maxLineBytes: Int

    public init(maxLineBytes: Int = 65_536) {
        self.maxLineBytes = maxLineBytes
    }

    public static let `default` = ParseLimits()
}
