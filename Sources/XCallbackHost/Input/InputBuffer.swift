/// The bytes a `LineReader` reads into. A line handed out points into it,
/// and the line keeps the buffer alive: if the thread processing a line
/// stalls and the input moves to another thread (`HandoffLoop`), the new
/// reader must not move or overwrite bytes the stalled thread is still
/// parsing. It sees the buffer is shared and switches to a fresh one.
final class InputBuffer: @unchecked Sendable {
    // @unchecked: the bytes of a line are only read once handed out; only
    // the reader that owns the buffer uniquely writes to it.
    let bytes: UnsafeMutablePointer<UInt8>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        self.bytes = .allocate(capacity: capacity)
    }

    deinit { bytes.deallocate() }
}
