import CXCallback
import XCallbackParameters

/// Completes a reply token through the API table.
struct ReplySender: @unchecked Sendable {
    // @unchecked: the host API table is immutable and outlives the plug-in.
    let api: UnsafePointer<xcallback_host_api>

    func send(_ answer: Reply, to reply: xcallback_reply) {
        let table = api.pointee
        switch answer.kind {
        case .success(let parameters):
            var bytes = 0
            for parameter in parameters { bytes += parameter.name.utf8.count + parameter.value.utf8.count + 2 }
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(bytes, 1)) { text in
                withUnsafeTemporaryAllocation(of: xcallback_param.self, capacity: max(parameters.count, 1)) { items in
                    var cursor = 0
                    func copy(_ string: String) -> UnsafePointer<CChar> {
                        let start = text.baseAddress! + cursor
                        var string = string
                        let count = string.withUTF8 { utf8 -> Int in
                            if let base = utf8.baseAddress { memcpy(start, base, utf8.count) }
                            return utf8.count
                        }
                        start[count] = 0
                        cursor += count + 1
                        return UnsafePointer(start)
                    }
                    for (index, parameter) in parameters.enumerated() {
                        items[index] = xcallback_param(name: copy(parameter.name), value: copy(parameter.value))
                    }
                    _ = table.reply_success(reply, items.baseAddress, parameters.count)
                }
            }
        case .error(let code, let message, let domain):
            _ = table.reply_error(reply, code, message, domain)
        case .cancel:
            _ = table.reply_cancel(reply)
        case .decline:
            _ = table.reply_decline(reply)
        }
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
