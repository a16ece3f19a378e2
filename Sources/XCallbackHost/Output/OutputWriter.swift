import XCallbackSystem

/// Where an `OutputSink` puts the bytes of its records.
protocol OutputWriter: Flushable {
    /// Adds the bytes of one record; `fill` runs under the writer's lock,
    /// so callers that must keep an order among themselves can rely on it.
    func append(_ fill: (inout [UInt8]) -> Void)

    /// Waits while too many records wait to be written: the back-pressure
    /// the input applies before it reads another line.
    func waitForRoom()

    /// Returns once every record appended so far is written, or the reader
    /// is gone.
    func finish()
}

extension BufferedWriter: OutputWriter {
    // Its appends write at once, or before the appending thread blocks for
    // more input: nothing piles up, so there is always room.
    func waitForRoom() {}

    func finish() { flush() }
}
