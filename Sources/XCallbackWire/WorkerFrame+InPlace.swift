import XCallbackBridge
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lanes' side of the frame codec: requests and answers written from,
/// and read into, the bytes the host and worker already hold, without the
/// Strings `WorkerFrame` decodes into. Each produces or accepts exactly the
/// bytes its `WorkerFrame` case does (`WorkerFrameTests`).
extension WorkerFrame {
    /// Appends a `result` frame for an answer kept in `capture` (a worker's
    /// lane): the bytes `.result(id:result:)` would encode, without Strings.
    package static func encodeResult(id: UInt64, capture: ReplyCapture, into output: inout [UInt8]) {
        appendFrame(.result, into: &output) { writer in
            writer.u64(id)
            writer.u8(capture.kind == .success ? 0 : 2)
            capture.withParameters { parameters, bytes in
                writer.u32(UInt32(parameters.count))
                for parameter in parameters {
                    writer.u32(UInt32(parameter.nameCount))
                    writer.output.append(contentsOf: UnsafeBufferPointer(start: bytes + parameter.nameStart, count: parameter.nameCount))
                    writer.u32(UInt32(parameter.valueCount))
                    writer.output.append(contentsOf: UnsafeBufferPointer(start: bytes + parameter.valueStart, count: parameter.valueCount))
                }
        }
        }
    }

    /// Appends a `request` frame for a request the host's lane filled in
    /// place (`urlCount` bytes of URL): the bytes `.request(id:handler:fields:)`
    /// would encode, without Strings. A lane's route is all literals, so
    /// there are no arguments.
    package static func encodeRequest(id: UInt64, handler: UInt32, request: NativeRequest, urlCount: Int,
                              into output: inout [UInt8]) {
        appendFrame(.request, into: &output) { writer in
            writer.u64(id)
            writer.u32(handler)
            writer.bytes(request.url, count: urlCount)
            writer.bytes(request.scheme, count: strlen(request.scheme))
            if let source = request.source {
                writer.u8(1)
                writer.bytes(source, count: strlen(source))
            } else {
                writer.u8(0)
                writer.u32(0)
        }
        writer.u32(UInt32(request.parameterCount))
        for index in 0..<request.parameterCount {
            guard let name = request.parameterName(at: index), let (value, count) = request.parameterValue(at: index) else { continue }
            writer.bytes(name, count: strlen(name))
            writer.bytes(value, count: count)
        }
        writer.u32(0)
        writer.u64(request.id)
        writer.u32(request.attempt)
        }
    }

    /// The answer in a `result` frame's payload, read in place: its id,
    /// kind, and parameters as ranges of the payload. Nil when it is not
    /// a success or cancel, or its text is not UTF-8 (the decoded frame, a
    /// `HandlerResult`, handles those).
    package static func peekAnswer(_ payload: UnsafeRawBufferPointer, into parameters: inout [ByteParameter])
        -> (id: UInt64, kind: OutcomeKind)? {
        var reader = WireReader(bytes: payload)
        guard let id = reader.u64(), let code = reader.u8(), code == 0 || code == 2, let count = reader.u32() else { return nil }
        parameters.removeAll(keepingCapacity: true)
        for _ in 0..<count {
            guard let name = reader.span(), let value = reader.span() else { return nil }
            parameters.append(ByteParameter(nameStart: name.start, nameCount: name.count,
                                            valueStart: value.start, valueCount: value.count))
        }
        guard reader.isAtEnd, code == 0 || parameters.isEmpty else { return nil }
        for parameter in parameters {
            let name = UnsafeBufferPointer(rebasing: payload.assumingMemoryBound(to: UInt8.self)[parameter.nameStart..<parameter.nameStart + parameter.nameCount])
            let value = UnsafeBufferPointer(rebasing: payload.assumingMemoryBound(to: UInt8.self)[parameter.valueStart..<parameter.valueStart + parameter.valueCount])
            guard UTF8Check.isValid(name), UTF8Check.isValid(value) else { return nil }
        }
        return (id, code == 0 ? .success : .cancel)
    }

    /// The id of a `returned` frame's payload.
    package static func peekReturned(_ payload: UnsafeRawBufferPointer) -> UInt64? {
        var reader = WireReader(bytes: payload)
        guard let id = reader.u64(), reader.isAtEnd else { return nil }
        return id
    }

    /// Fills `request` from a `request` frame's payload, in place, for
    /// route `route`; returns the frame's id and handler, or nil when the
    /// payload is malformed (the decoded frame then reports it).
    package static func fillRequest(_ payload: UnsafeRawBufferPointer, into request: NativeRequest, route: String)
        -> (id: UInt64, handler: UInt32)? {
        var reader = WireReader(bytes: payload)
        guard let id = reader.u64(), let handler = reader.u32(), let url = reader.span(), let scheme = reader.span(),
              let hasSource = reader.u8(), let source = reader.span()
        else { return nil }
        request.beginFill(byteCount: payload.count, route: route)
        request.addURL(payload.slice(url))
        request.addScheme(payload.slice(scheme))
        if hasSource != 0 { request.addSource(payload.slice(source)) }
        guard let parameterCount = reader.u32(), Int(parameterCount) <= payload.count / 8 else { return nil }
        for _ in 0..<parameterCount {
            guard let name = reader.span(), let value = reader.span() else { return nil }
            request.addParameter(name: payload.slice(name), value: payload.slice(value))
        }
        guard let argumentCount = reader.u32(), Int(argumentCount) <= payload.count / 8 else { return nil }
        for _ in 0..<argumentCount {
            guard let name = reader.span(), let value = reader.span() else { return nil }
            request.addArgument(name: payload.slice(name), value: payload.slice(value))
        }
        guard let requestID = reader.u64(), let attempt = reader.u32(), reader.isAtEnd else { return nil }
        request.assign(id: requestID, attempt: attempt)
        return (id, handler)
    }

    /// A `request` frame's handler, without reading the rest.
    package static func peekHandler(_ payload: UnsafeRawBufferPointer) -> UInt32? {
        var reader = WireReader(bytes: payload)
        guard reader.u64() != nil else { return nil }
        return reader.u32()
    }

}

extension UnsafeRawBufferPointer {
    package func slice(_ span: (start: Int, count: Int)) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[span.start..<span.start + span.count])
    }
}

