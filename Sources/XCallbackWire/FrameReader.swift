#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads frames from a socket in large chunks, so a burst of pipelined
/// frames costs one `read`.
public final class FrameReader {
    public enum Next {
        case frame(WorkerFrame)
        /// The peer closed, or the stream broke.
        case end
        /// A frame did not decode: the peers disagree; stop talking.
        case malformed
        /// `intercept` took a frame and asked for it to be returned now.
        case intercepted
    }

    /// What `intercept` did with a frame.
    public enum Interception {
        /// Nothing: decode it as usual.
        case decode
        /// Took it; go on to the next frame.
        case consumed
        /// Took it; return `.intercepted` now.
        case handedOver
    }

    private let descriptor: Int32
    // One thread at a time reads a socket (a stall hand-off passes it on),
    // so the runtime's exclusivity checks (a thread-local lookup each,
    // three a frame) are off for these.
    @exclusivity(unchecked) private var buffer: [UInt8] = []
    @exclusivity(unchecked) private var start = 0
    /// Where `read` puts bytes: made at the first read, and never zeroed
    /// (a hundred idle workers cost the host no 128 KiB each).
    @exclusivity(unchecked) private var chunk: UnsafeMutableRawPointer?
    private static let chunkSize = 128 * 1024

    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { chunk?.deallocate() }

    private enum Decoded {
        case frame(WorkerFrame, size: Int)
        /// `intercept` took the frame as it was.
        case taken(size: Int, handedOver: Bool)
        case incomplete
        case malformed
    }

    /// Sees each frame's kind and payload before it is decoded (the lanes
    /// read requests and answers in place); the payload is valid only
    /// during the call.
    public typealias Intercept = (_ kind: UInt8, _ payload: UnsafeRawBufferPointer) -> Interception

    /// The frame at the start of `bytes`: length (4 bytes, little-endian),
    /// kind (1 byte), payload.
    private static func decodeFrame(_ bytes: UnsafeRawBufferPointer, intercept: Intercept? = nil) -> Decoded {
        guard bytes.count >= 5 else { return .incomplete }
        let length = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16 | Int(bytes[3]) << 24
        guard length <= WorkerFrame.maxPayload else { return .malformed }
        guard bytes.count >= 5 + length else { return .incomplete }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[5..<(5 + length)])
        switch intercept?(bytes[4], payload) ?? .decode {
        case .decode: break
        case .consumed: return .taken(size: 5 + length, handedOver: false)
        case .handedOver: return .taken(size: 5 + length, handedOver: true)
        }
        guard let frame = WorkerFrame.decode(kind: bytes[4], payload: payload) else {
            return .malformed
        }
        return .frame(frame, size: 5 + length)
    }

    /// The whole frames in `bytes`, up to the first that does not decode.
    public static func frames(in bytes: UnsafeRawBufferPointer) -> [WorkerFrame] {
        var frames: [WorkerFrame] = []
        var offset = 0
        while case .frame(let frame, let size) = decodeFrame(UnsafeRawBufferPointer(rebasing: bytes[offset...])) {
            frames.append(frame)
            offset += size
        }
        return frames
    }

    /// The next frame; `beforeBlocking` runs before each read, when every
    /// frame read so far is handled; `afterReading` after each read that
    /// got bytes, told whether it emptied the descriptor (took less than
    /// it asked for); `intercept` (if any) sees every frame first.
    public func next(beforeBlocking: () -> Void, afterReading: (_ emptied: Bool) -> Void = { _ in },
                     intercept: Intercept? = nil) -> Next {
        while true {
            let decoded = buffer.withUnsafeBytes {
                Self.decodeFrame(UnsafeRawBufferPointer(rebasing: $0[start...]), intercept: intercept)
            }
            switch decoded {
            case .frame(let frame, let size):
                start += size
                return .frame(frame)
            case .taken(let size, let handedOver):
                start += size
                if handedOver { return .intercepted }
                continue
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
            let chunk = self.chunk ?? UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
            self.chunk = chunk
            let count = read(descriptor, chunk, Self.chunkSize)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return .end }
            afterReading(count < Self.chunkSize)
            buffer.append(contentsOf: UnsafeBufferPointer(start: chunk.assumingMemoryBound(to: UInt8.self), count: count))
        }
    }
}
