import XCallbackBridge
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The messages between the host and a worker process, over a socketpair.
///
/// Each frame is a 4-byte little-endian payload length, a 1-byte kind, and
/// the payload; strings are a 4-byte length and UTF-8 bytes. Requests are
/// pipelined: the host sends as many as it has without waiting, and the
/// worker answers in completion order, each answer naming its request id.
public enum WorkerFrame: Equatable, Sendable {
    /// Host → worker, first frame: the protocol version the host speaks.
    /// `taken`: routes other plug-ins own (pattern, owner), so the worker's
    /// registration refuses a conflicting one as an in-process load would.
    case hello(version: UInt32, taken: [QueryParameter])
    /// Worker → host: the plug-in loaded; its identity and routes in
    /// registration order (a route's index is its handler index).
    /// `signatures`: the C declaration of each route that calls a bound
    /// function (route, declaration); `refused`: the routes it asked for
    /// that `hello` named as taken (pattern, owner). `check`, `plugins` and
    /// `routes` show all of it: they learn a plug-in from this frame, as
    /// `run` does, never from a report of another kind.
    case ready(version: UInt32, info: WireInfo, routes: [String], signatures: [QueryParameter] = [],
               refused: [QueryParameter] = [])
    /// Worker → host: the plug-in could not be loaded.
    case loadFailed(message: String)
    /// Host → worker: run handler `handler` for request `id`.
    case request(id: UInt64, handler: UInt32, fields: RequestFields)
    /// Worker → host: request `id` ended.
    case result(id: UInt64, result: HandlerResult)
    /// Worker → host: the handler of `id` returned without completing yet
    /// (it will complete later, from another thread). A request whose
    /// handler never returned, at its deadline, means a hung worker.
    case returned(id: UInt64)
    /// Host → worker: finish and exit.
    case shutdown
    /// Both ways, once: the host sends it when it has read `ready`, and
    /// the worker echoes it from its request loop, which it enters only
    /// after writing `ready`. So the worker's own `ready` always comes
    /// before the echo: a host that reads anything between its `ready` and
    /// the echo has read bytes the worker did not write as its handshake
    /// (its plug-in's constructors wrote on the socket), and refuses it.
    case sync

    /// 3: a request frame carries the request's attempt after its id.
    /// 4: a ready frame carries the routes' signatures and the refused
    /// routes; `sync` ends the handshake.
    public static let protocolVersion: UInt32 = 4
    /// Frames larger than this are a protocol error, not an allocation.
    public static let maxPayload = 16 * 1024 * 1024
    /// The most routes a ready frame may name: past it the frame is
    /// malformed before any is read (the handshake refuses such a worker).
    public static let maxRoutes = 65_536

    public struct WireInfo: Equatable, Sendable {
        public var name: String
        public var version: String
        public var summary: String
        public var abiMajor: UInt16
        public var abiMinor: UInt16

        public init(name: String, version: String, summary: String, abiMajor: UInt16, abiMinor: UInt16) {
            self.name = name
            self.version = version
            self.summary = summary
            self.abiMajor = abiMajor
            self.abiMinor = abiMinor
        }
    }

    public enum Kind: UInt8 {
        case hello = 1, ready, loadFailed, request, result, returned, shutdown, sync
    }

    // MARK: encoding and decoding, kind by kind

    public func encode(into output: inout [UInt8]) {
        switch self {
        case .hello(let version, let taken):
            Self.appendFrame(.hello, into: &output) { writer in
                writer.u32(version)
                writer.pairs(taken)
            }
        case .ready(let version, let info, let routes, let signatures, let refused):
            Self.appendFrame(.ready, into: &output) { writer in
                writer.u32(version)
                writer.string(info.name)
                writer.string(info.version)
                writer.string(info.summary)
                writer.u16(info.abiMajor)
                writer.u16(info.abiMinor)
                writer.u32(UInt32(routes.count))
                routes.forEach { writer.string($0) }
                writer.pairs(signatures)
                writer.pairs(refused)
            }
        case .loadFailed(let message):
            Self.appendFrame(.loadFailed, into: &output) { $0.string(message) }
        case .request(let id, let handler, let fields):
            RequestFrame.write(id: id, handler: handler, fields, into: &output)
        case .result(let id, let result):
            ResultFrame.write(id: id, result, into: &output)
        case .returned(let id):
            Self.appendFrame(.returned, into: &output) { $0.u64(id) }
        case .shutdown:
            Self.appendFrame(.shutdown, into: &output) { _ in }
        case .sync:
            Self.appendFrame(.sync, into: &output) { _ in }
        }
    }

    /// Decodes one frame's kind and payload; nil when malformed. Trailing
    /// bytes are malformed too: the two sides disagree on the format.
    public static func decode(kind rawKind: UInt8, payload: UnsafeRawBufferPointer) -> WorkerFrame? {
        guard let kind = Kind(rawValue: rawKind) else { return nil }
        var reader = WireReader(bytes: payload)
        switch kind {
        case .hello:
            guard let version = reader.u32(), let taken = reader.pairs(), reader.isAtEnd else { return nil }
            return .hello(version: version, taken: taken)
        case .ready:
            guard let version = reader.u32(), let name = reader.string(), let pluginVersion = reader.string(),
                  let summary = reader.string(), let major = reader.u16(), let minor = reader.u16(),
                  let count = reader.u32(), Int(count) <= maxRoutes,
                  Int(count) <= (payload.count - reader.offset) / 4 else { return nil }
            var routes: [String] = []
            for _ in 0..<count {
                guard let route = reader.string() else { return nil }
                routes.append(route)
            }
            // No more signatures than routes, no more refusals than routes
            // may be: bounded before the handshake checks anything else.
            guard let signatures = reader.pairs(), signatures.count <= routes.count,
                  let refused = reader.pairs(), refused.count <= maxRoutes, reader.isAtEnd else { return nil }
            return .ready(version: version, info: WireInfo(name: name, version: pluginVersion, summary: summary,
                                                           abiMajor: major, abiMinor: minor), routes: routes,
                          signatures: signatures, refused: refused)
        case .loadFailed:
            guard let message = reader.string(), reader.isAtEnd else { return nil }
            return .loadFailed(message: message)
        case .request:
            var builder = RequestFieldsBuilder()
            guard let (id, handler) = RequestFrame.read(payload, into: &builder) else { return nil }
            return .request(id: id, handler: handler, fields: builder.fields)
        case .result:
            return ResultFrame.decode(payload).map { .result(id: $0.id, result: $0.result) }
        case .returned:
            return returnedID(payload).map { .returned(id: $0) }
        case .shutdown:
            return payload.isEmpty ? .shutdown : nil
        case .sync:
            return payload.isEmpty ? .sync : nil
        }
    }

    /// The id of a `returned` frame's payload (a lane reads it in place).
    public static func returnedID(_ payload: UnsafeRawBufferPointer) -> UInt64? {
        var reader = WireReader(bytes: payload)
        guard let id = reader.u64(), reader.isAtEnd else { return nil }
        return id
    }

    /// Appends one frame: its payload's length, `kind`, and the payload
    /// `fill` writes.
    public static func appendFrame(_ kind: Kind, into output: inout [UInt8], _ fill: (inout WireWriter) -> Void) {
        let start = output.count
        var writer = WireWriter(output: [])
        swap(&writer.output, &output)
        defer { swap(&writer.output, &output) }
        writer.output.append(contentsOf: [0, 0, 0, 0, kind.rawValue])
        fill(&writer)
        let length = UInt32(writer.output.count - start - headerSize)
        for index in 0..<4 {
            writer.output[start + index] = UInt8(truncatingIfNeeded: length >> UInt32(8 * index))
        }
    }

    /// A frame's length (u32, of its payload) and kind (u8), before its payload.
    public static let headerSize = 5
    public static let requestKind = Kind.request.rawValue
    public static let resultKind = Kind.result.rawValue
    public static let returnedKind = Kind.returned.rawValue
}
