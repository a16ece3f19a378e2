import XCallbackBridge
import XCallbackURL

/// The `result` frame, worker → host: request `id` ended.
///
/// Payload: `id` u64, a `ResultCode` u8, and the outcome's parameters (a
/// u32 count and name/value strings; none for a decline). This type is the
/// only code that knows that layout: a worker's general path writes it from
/// a `HandlerResult`, its lane from the bytes in its `ReplyCapture`, and the
/// host reads every one through `read(_:into:)`: in place when it can write
/// the record from the bytes, as a `HandlerResult` when it cannot.
public enum ResultFrame {
    /// What a handler's call came to, as the wire names it.
    public enum Code: UInt8, Sendable {
        case success = 0
        case error = 1
        case cancel = 2
        case declined = 3

        public init(_ kind: OutcomeKind) {
            switch kind {
            case .success: self = .success
            case .error: self = .error
            case .cancel: self = .cancel
            }
        }

        /// The outcome kind, nil for a decline.
        public var outcomeKind: OutcomeKind? {
            switch self {
            case .success: .success
            case .error: .error
            case .cancel: .cancel
            case .declined: nil
            }
        }
    }

    public static func write(id: UInt64, _ result: HandlerResult, into output: inout [UInt8]) {
        WorkerFrame.appendFrame(.result, into: &output) { writer in
            writer.u64(id)
            switch result {
            case .declined:
                writer.u8(Code.declined.rawValue)
                writer.pairs([])
            case .outcome(let outcome):
                writer.u8(Code(outcome.kind).rawValue)
                writer.pairs(outcome.parameters)
            }
        }
    }

    /// The answer a worker's lane left in `capture` (a success or a cancel),
    /// from its bytes: the frame `write(id:_:into:)` makes of the same answer.
    public static func write(id: UInt64, capture: ReplyCapture, into output: inout [UInt8]) {
        WorkerFrame.appendFrame(.result, into: &output) { writer in
            writer.u64(id)
            writer.u8(Code(capture.kind).rawValue)
            capture.withParameters { parameters, bytes in
                writer.u32(UInt32(parameters.count))
                for parameter in parameters {
                    writer.bytes(bytes + parameter.nameStart, count: parameter.nameCount)
                    writer.bytes(bytes + parameter.valueStart, count: parameter.valueCount)
                }
            }
        }
    }

    /// Reads a payload: its id and code, each parameter's name and value
    /// (ranges of the payload) handed to `parameter`; nil when malformed.
    /// The one reader of a result frame, for both uses below.
    private static func read(_ payload: UnsafeRawBufferPointer,
                             parameter: (_ name: (start: Int, count: Int), _ value: (start: Int, count: Int)) -> Void)
        -> (id: UInt64, code: Code, parameterCount: Int)? {
        var reader = WireReader(bytes: payload)
        guard let id = reader.u64(), let code = reader.u8().flatMap(Code.init(rawValue:)) else { return nil }
        var count = 0
        guard reader.eachPair({ name, value in
                  count += 1
                  parameter(name, value)
              }),
              reader.isAtEnd, code != .declined || count == 0
        else { return nil }
        return (id, code, count)
    }

    /// Reads a payload: its id and code, with each parameter's name and
    /// value as ranges of the payload in `parameters`; nil when malformed.
    public static func read(_ payload: UnsafeRawBufferPointer, into parameters: inout [ByteParameter])
        -> (id: UInt64, code: Code)? {
        parameters.removeAll(keepingCapacity: true)
        return read(payload) { name, value in
            parameters.append(ByteParameter(nameStart: name.start, nameCount: name.count,
                                            valueStart: value.start, valueCount: value.count))
        }.map { ($0.id, $0.code) }
    }

    /// The answer in a payload when the host can write its record from the
    /// payload's bytes: a success, or a cancel without parameters, all its
    /// text UTF-8. Nil otherwise, malformed included: `decode` then tells
    /// the two apart.
    public static func answerInPlace(_ payload: UnsafeRawBufferPointer, into parameters: inout [ByteParameter])
        -> (id: UInt64, kind: OutcomeKind)? {
        guard let (id, code) = read(payload, into: &parameters),
              code == .success || (code == .cancel && parameters.isEmpty)
        else { return nil }
        let bytes = payload.assumingMemoryBound(to: UInt8.self)
        for parameter in parameters {
            guard UTF8Check.isValid(UnsafeBufferPointer(rebasing: bytes[parameter.nameStart..<parameter.nameStart + parameter.nameCount])),
                  UTF8Check.isValid(UnsafeBufferPointer(rebasing: bytes[parameter.valueStart..<parameter.valueStart + parameter.valueCount]))
            else { return nil }
        }
        return (id, code == .success ? .success : .cancel)
    }

    /// The frame as a `HandlerResult`; text that is not UTF-8 is repaired.
    /// Strings are made in the one pass that checks the frame: a hostile
    /// count costs no list of ranges beside them.
    public static func decode(_ payload: UnsafeRawBufferPointer) -> (id: UInt64, result: HandlerResult)? {
        var parameters: [QueryParameter] = []
        guard let (id, code, _) = read(payload, parameter: { name, value in
            parameters.append(QueryParameter(name: String(decoding: payload.slice(name), as: UTF8.self),
                                             value: String(decoding: payload.slice(value), as: UTF8.self)))
        }) else { return nil }
        guard let kind = code.outcomeKind else { return (id, .declined) }
        return (id, .outcome(Outcome(kind: kind, parameters: parameters)))
    }
}
