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

    private enum Decoded {
        case frame(WorkerFrame, size: Int)
        case incomplete
        case malformed
    }

    /// The frame at the start of `bytes`: length (4 bytes, little-endian),
    /// kind (1 byte), payload.
    private static func decodeFrame(_ bytes: UnsafeRawBufferPointer) -> Decoded {
        guard bytes.count >= 5 else { return .incomplete }
        let length = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
        guard length <= WorkerFrame.maxPayload else { return .malformed }
        guard bytes.count >= 5 + length else { return .incomplete }
        guard let frame = WorkerFrame.decode(kind: bytes[4], payload: UnsafeRawBufferPointer(rebasing: bytes[5..<(5 + length)])) else {
            return .malformed
        }
        return .frame(frame, size: 5 + length)
    }

    /// The whole frames in `bytes`, up to the first that does not decode.
    static func frames(in bytes: UnsafeRawBufferPointer) -> [WorkerFrame] {
        var frames: [WorkerFrame] = []
        var offset = 0
        while case .frame(let frame, let size) = decodeFrame(UnsafeRawBufferPointer(rebasing: bytes[offset...])) {
            frames.append(frame)
            offset += size
        }
        return frames
    }

    /// The next frame; `beforeBlocking` runs before each blocking read.
    func next(beforeBlocking: () -> Void) -> Next {
        while true {
            let decoded = buffer.withUnsafeBytes {
                Self.decodeFrame(UnsafeRawBufferPointer(rebasing: $0[start...]))
            }
            switch decoded {
            case .frame(let frame, let size):
                start += size
                return .frame(frame)
            case .malformed:
                return .malformed
            case .incomplete:
                break
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
