extension Array where Element: BitwiseCopyable {
    /// Empties the array and keeps its storage, as `removeAll(keepingCapacity:
    /// true)` does: that one goes through a generic `replaceSubrange`,
    /// several times dearer than popping the handful of offsets a parsed
    /// line holds, and the lanes clear several such arrays for every line.
    @inlinable
    public mutating func removeAllKeepingStorage() {
        while popLast() != nil {}
    }
}
