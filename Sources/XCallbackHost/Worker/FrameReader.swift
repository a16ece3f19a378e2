#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads frames from a socket in large chunks, so a burst of pipelined
/// frames costs one `read`.
final class FrameReader {
    enum Next {
        case frame(WorkerFrame)
        /// The peer closed, or the stream broke.
        case end
        /// A frame did not decode: the peers disagree; stop talking.
        case malformed
    }

    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 128 * 1024)

    init(descriptor: Int32) {
        self.descriptor = descriptor
        buffer.reserveCapacity(256 * 1024)
    }

    /// The next frame; `beforeBlocking` runs before each blocking read.
    func next(beforeBlocking: () -> Void) -> Next {
        while true {
            let available = buffer.count - start
            if available >= 5 {
                let length = Int(buffer[start]) | Int(buffer[start + 1]) << 8
                    | Int(buffer[start + 2]) << 16 | Int(buffer[start + 3]) << 24
                guard length <= WorkerFrame.maxPayload else { return .malformed }
                if available >= 5 + length {
                    let kind = buffer[start + 4]
                    let frame = buffer.withUnsafeBytes {
                        WorkerFrame.decode(kind: kind, payload: UnsafeRawBufferPointer(rebasing: $0[(start + 5)..<(start + 5 + length)]))
                    }
                    start += 5 + length
                    guard let frame else { return .malformed }
                    return .frame(frame)
                }
            }
            beforeBlocking()
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return .end }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }
}
