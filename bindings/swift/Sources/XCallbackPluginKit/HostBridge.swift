import CXCallback
import XCallbackParameters

/// Completes a reply token through the API table.
struct ReplySender: @unchecked Sendable {
    // @unchecked: the host API table is immutable and outlives the plug-in.
    let api: UnsafePointer<xcallback_host_api>

    func send(_ answer: Reply, to reply: xcallback_reply) {
        switch answer.kind {
        case .success(let parameters):
            parameters.send(through: self, to: reply)
        case .error(let code, let message, let domain):
            _ = api.pointee.reply_error(reply, code, message, domain)
        case .cancel:
            _ = api.pointee.reply_cancel(reply)
        case .decline:
            _ = api.pointee.reply_decline(reply)
        }
    }

    /// A success with one parameter, the commonest: its name and value
    /// copied as C strings into one buffer on the stack.
    func sendSuccess(name: String, value: String, to reply: xcallback_reply) {
        let nameCount = name.utf8.count
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: nameCount + value.utf8.count + 2) { text in
            let start = text.baseAddress!
            _ = Self.copyUTF8(of: name, to: start)
            start[nameCount] = 0
            let valueStart = start + nameCount + 1
            valueStart[Self.copyUTF8(of: value, to: valueStart)] = 0
            withUnsafePointer(to: xcallback_param(name: start, value: valueStart)) {
                _ = api.pointee.reply_success(reply, $0, 1)
            }
        }
    }

    /// A success, its names and values copied as C strings into one buffer
    /// on the stack. The parameters are read in place, where iterating the
    /// array would copy each one (two retains and two releases).
    func sendSuccess(_ parameters: UnsafeBufferPointer<QueryParameter>, to reply: xcallback_reply) {
        var bytes = 0
        for index in parameters.indices {
            bytes += parameters[index].name.utf8.count + parameters[index].value.utf8.count + 2
        }
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(bytes, 1)) { text in
            withUnsafeTemporaryAllocation(of: xcallback_param.self, capacity: max(parameters.count, 1)) { items in
                var cursor = 0
                func copy(_ string: String) -> UnsafePointer<CChar> {
                    let start = text.baseAddress! + cursor
                    let count = Self.copyUTF8(of: string, to: start)
                    start[count] = 0
                    cursor += count + 1
                    return UnsafePointer(start)
                }
                for index in parameters.indices {
                    items[index] = xcallback_param(name: copy(parameters[index].name), value: copy(parameters[index].value))
                }
                _ = api.pointee.reply_success(reply, items.baseAddress, parameters.count)
            }
        }
    }

    /// Copies `string`'s UTF-8 to `target`; returns how many bytes.
    private static func copyUTF8(of string: String, to target: UnsafeMutablePointer<CChar>) -> Int {
        func copy(_ utf8: UnsafeBufferPointer<UInt8>) -> Int {
            if let base = utf8.baseAddress { memcpy(target, base, utf8.count) }
            return utf8.count
        }
        // In place when the string is contiguous (nearly always), without
        // the copy of the String that `withUTF8` (mutating) asks for.
        if let count = string.utf8.withContiguousStorageIfAvailable(copy) { return count }
        var string = string
        return string.withUTF8(copy)
    }
}

/// The `:name` and `*` arguments of a pattern, for reading them back.
enum PatternArguments {
    static func names(in pattern: String) -> [String] {
        var names: [String] = []
        var current: String?
        for character in pattern {
            if character == ":" && current == nil {
                current = ""
            } else if var name = current {
                if character == "/" || character == "(" || character == ")" || character == "?" {
                    if !name.isEmpty { names.append(name) }
                    current = nil
                } else {
                    name.append(character)
                    current = name
                }
            }
        }
        if let name = current, !name.isEmpty { names.append(name) }
        if pattern.hasSuffix("*") { names.append("*") }
        return names
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
