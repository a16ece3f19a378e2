#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CXCallback
import XCallbackURL

/// Where a fast-lane handler's answer is kept when it replies before it
/// returns: the names and values copied as bytes into one buffer that
/// lives as long as the lane, so a reply costs no Strings and no array. The
/// record is written from these bytes (`CallbackURL.append(prefix:…)`); the
/// rare paths that need an `Outcome` (a chain, `--keep-order`, `jsonl`)
/// build one with `outcome`.
public final class ReplyCapture: @unchecked Sendable {
    // @unchecked: filled by the completing thread while it holds the
    // lane's reply slot (`SynchronousSlot`), read by the lane's thread
    // after `endSynchronous` (or by the deadline timer holding the slot),
    // never at once.
    /// Read through a getter: code in other modules reading the stored
    /// property directly still checked each access at run time.
    public var kind: OutcomeKind { answerKind }
    @exclusivity(unchecked) private var answerKind: OutcomeKind = .success
    @exclusivity(unchecked) private var bytes: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var used = 0
    @exclusivity(unchecked) public private(set) var parameters: [ByteParameter] = []

    public init() {
        capacity = 1024
        bytes = .allocate(capacity: capacity)
        parameters.reserveCapacity(8)
    }

    deinit { bytes.deallocate() }

    /// Copies a success reply's parameters. False, keeping nothing, when a
    /// name or value is not UTF-8: the general path repairs it and warns.
    public func captureSuccess(_ params: UnsafePointer<xcallback_param>?, count: Int) -> Bool {
        answerKind = .success
        used = 0
        parameters.removeAll(keepingCapacity: true)
        for index in 0..<count {
            guard let item = params?[index], let name = item.name else { continue }
            guard let nameRange = append(name) else { return false }
            var valueRange = (start: used, count: 0)
            if let value = item.value {
                guard let range = append(value) else { return false }
                valueRange = range
            }
            parameters.append(ByteParameter(nameStart: nameRange.start, nameCount: nameRange.count,
                                            valueStart: valueRange.start, valueCount: valueRange.count))
        }
        return true
    }

    /// A cancel reply: no parameters.
    public func captureCancel() {
        answerKind = .cancel
        used = 0
        parameters.removeAll(keepingCapacity: true)
    }

    /// Appends `text write` (`success?…`, `cancel`, or the callback URL with
    /// the parameters) to `output`; `callback` is the decoded callback URL.
    public func appendRecord(callback: UnsafeBufferPointer<UInt8>?, to output: inout [UInt8]) {
        parameters.withUnsafeBufferPointer { parameters in
            Self.appendRecord(kind, callback: callback, parameters: parameters, in: UnsafePointer(bytes), to: &output)
        }
    }

    /// The record of a success or cancel answer whose parameters are ranges
    /// of `bytes` (this capture's, or a worker's answer frame read in place).
    public static func appendRecord(_ kind: OutcomeKind, callback: UnsafeBufferPointer<UInt8>?,
                             parameters: UnsafeBufferPointer<ByteParameter>, in bytes: UnsafePointer<UInt8>,
                             to output: inout [UInt8]) {
        if let callback {
            CallbackURL.append(prefix: callback, isURL: true, parameters: parameters, in: bytes, into: &output)
        } else {
            let word: StaticString = kind == .success ? "success" : "cancel"
            CallbackURL.append(prefix: UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount),
                               isURL: false, parameters: parameters, in: bytes, into: &output)
        }
        output.append(UInt8(ascii: "\n"))
    }

    /// Runs `body` with the parameters and the bytes they point into.
    public func withParameters<R>(_ body: (UnsafeBufferPointer<ByteParameter>, UnsafePointer<UInt8>) -> R) -> R {
        parameters.withUnsafeBufferPointer { body($0, UnsafePointer(bytes)) }
    }

    /// The answer as an `Outcome`, for the paths that need one.
    public var outcome: Outcome {
        parameters.withUnsafeBufferPointer { Self.outcome(kind, parameters: $0, in: UnsafePointer(bytes)) }
    }

    /// A success or cancel answer whose parameters are ranges of `bytes`,
    /// as an `Outcome`.
    public static func outcome(_ kind: OutcomeKind, parameters: UnsafeBufferPointer<ByteParameter>,
                               in bytes: UnsafePointer<UInt8>) -> Outcome {
        guard kind == .success else { return .cancel }
        return .success(parameters.map { parameter in
            QueryParameter(
                name: String(decoding: UnsafeBufferPointer(start: bytes + parameter.nameStart, count: parameter.nameCount), as: UTF8.self),
                value: String(decoding: UnsafeBufferPointer(start: bytes + parameter.valueStart, count: parameter.valueCount), as: UTF8.self))
        })
    }

    /// Copies a C string's bytes if they are UTF-8; returns where they went.
    private func append(_ text: UnsafePointer<CChar>) -> (start: Int, count: Int)? {
        let count = strlen(text)
        let source = UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self)
        guard UTF8Check.isValid(UnsafeBufferPointer(start: source, count: count)) else { return nil }
        if used + count > capacity {
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: max(capacity * 2, used + count))
            grown.update(from: bytes, count: used)
            bytes.deallocate()
            bytes = grown
            capacity = max(capacity * 2, used + count)
        }
        (bytes + used).update(from: source, count: count)
        defer { used += count }
        return (used, count)
    }
}
