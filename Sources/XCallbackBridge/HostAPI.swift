import CXCallback
import Logging
import XCallbackRouting
import XCallbackSystem
import XCallbackURL

/// The `xcallback_host_api` table every plug-in receives.
///
/// This enum (the table and `replies`) is the host's only global state: C
/// function pointers cannot capture context, so the table must be static and
/// completion tokens must be resolved through a process-wide table.
public enum HostAPI {
    /// Every reply token in this process.
    public static let replies = ReplyTable()

    /// Where refused completions are reported.
    public static let logger = Logger(label: "xcallback.abi")

    /// The table, built once and never freed.
    nonisolated(unsafe) static let table: UnsafePointer<xcallback_host_api> = {
        let table = UnsafeMutablePointer<xcallback_host_api>.allocate(capacity: 1)
        table.initialize(to: makeTable())
        return UnsafePointer(table)
    }()

    private static func makeTable() -> xcallback_host_api {
        var api = xcallback_host_api()
        api.api_size = UInt32(MemoryLayout<xcallback_host_api>.size)
        api.abi_major = UInt16(XCALLBACK_ABI_MAJOR)
        api.abi_minor = UInt16(XCALLBACK_ABI_MINOR)

        api.register_action = { plugin, scheme, action, handler, userData in
            guard let handle = PluginHandle.from(plugin), let scheme, let action else {
                return Int32(XCALLBACK_ERR_INVALID_ARGUMENT)
            }
            return handle.register({ () throws(RoutePatternError) in
                try RoutePattern.action(scheme: String(cString: scheme), action: String(cString: action))
            }, handler: handler, userData: userData)
        }
        api.register_controller_action = { plugin, scheme, controller, action, handler, userData in
            guard let handle = PluginHandle.from(plugin), let scheme, let controller, let action else {
                return Int32(XCALLBACK_ERR_INVALID_ARGUMENT)
            }
            return handle.register({ () throws(RoutePatternError) in
                try RoutePattern.controllerAction(
                    scheme: String(cString: scheme), controller: String(cString: controller),
                    action: String(cString: action))
            }, handler: handler, userData: userData)
        }
        api.register_pattern = { plugin, pattern, handler, userData in
            guard let handle = PluginHandle.from(plugin), let pattern else {
                return Int32(XCALLBACK_ERR_INVALID_ARGUMENT)
            }
            return handle.register({ () throws(RoutePatternError) in
                try RoutePattern(String(cString: pattern))
            }, handler: handler, userData: userData)
        }
        api.register_function = { plugin, pattern, declaration, function, resultName in
            guard let handle = PluginHandle.from(plugin), let pattern, let declaration, let function else {
                return Int32(XCALLBACK_ERR_INVALID_ARGUMENT)
            }
            let result = resultName.map { String(cString: $0) }
            if result?.isEmpty == true { return Int32(XCALLBACK_ERR_INVALID_ARGUMENT) }
            let text = String(cString: declaration)
            let bound: BoundFunction
            do {
                let parsed = try CDeclaration(parsing: text)
                bound = try BoundFunction(declaration: parsed, address: unsafeBitCast(function, to: UnsafeRawPointer.self),
                                          resultName: result)
            } catch {
                handle.logger.error("refused function \"\(text)\": \(error)")
                return Int32(XCALLBACK_ERR_BAD_DECLARATION)
            }
            return handle.register({ () throws(RoutePatternError) in
                try RoutePattern(String(cString: pattern))
            }, .bound(bound))
        }

        api.request_url = { NativeRequest.borrow($0) { $0.url } }
        api.request_scheme = { NativeRequest.borrow($0) { $0.scheme } }
        api.request_source = { NativeRequest.borrow($0) { $0.source } }
        api.request_argument = { request, name in
            guard let name else { return nil }
            return NativeRequest.borrow(request) { $0.argument(named: name) }
        }
        api.request_parameter_count = { NativeRequest.borrow($0) { $0.parameterCount } ?? 0 }
        api.request_parameter_name = { request, index in
            NativeRequest.borrow(request) { $0.parameterName(at: Int(index)) }
        }
        api.request_parameter_value = { request, index, length in
            guard let (value, count) = NativeRequest.borrow(request, { $0.parameterValue(at: Int(index)) }) else { return nil }
            length?.pointee = count
            return value
        }
        api.request_parameter = { request, name, length in
            guard let name, let (value, count) = NativeRequest.borrow(request, { $0.parameter(named: name) }) else { return nil }
            length?.pointee = count
            return value
        }

        api.request_route = { NativeRequest.borrow($0) { $0.route } }
        api.request_argument_count = { NativeRequest.borrow($0) { $0.argumentCount } ?? 0 }
        api.request_argument_name = { request, index in
            NativeRequest.borrow(request) { $0.argumentName(at: Int(index)) }
        }
        api.request_argument_value = { request, index in
            NativeRequest.borrow(request) { $0.argumentValue(at: Int(index)) }
        }
        api.request_id = { NativeRequest.borrow($0) { $0.id } ?? 0 }
        api.request_attempt = { NativeRequest.borrow($0) { $0.attempt } ?? 0 }

        api.reply_success = { reply, params, count in
            // The fast lane keeps the answer as bytes, when it is its call.
            if HostAPI.replies.completeInPlace(reply, { $0.captureSuccess(params, count: count) }) == true {
                return Int32(XCALLBACK_OK)
            }
            return HostAPI.complete(reply) { plugin, request in
                var parameters: [QueryParameter] = []
                parameters.reserveCapacity(count)
                for index in 0..<count {
                    guard let item = params?[index], let name = item.name else { continue }
                    parameters.append(QueryParameter(
                        name: HostAPI.text(name, "a parameter name", plugin, request),
                        value: item.value.map { HostAPI.text($0, "the value of parameter '\(PrintableText.escaping(String(cString: name)))'", plugin, request) } ?? ""))
                }
                return .outcome(.success(parameters))
            }
        }
        api.reply_error = { reply, code, message, domain in
            guard let code else { return Int32(XCALLBACK_ERR_INVALID_ARGUMENT) }
            return HostAPI.complete(reply) { plugin, request in
                .outcome(.error(
                    code: HostAPI.text(code, "its errorCode", plugin, request),
                    message: message.map { HostAPI.text($0, "its errorMessage", plugin, request) } ?? "",
                    domain: domain.map { HostAPI.text($0, "its errorDomain", plugin, request) } ?? plugin))
            }
        }
        api.reply_cancel = { reply in
            if HostAPI.replies.completeInPlace(reply, { $0.captureCancel(); return true }) == true {
                return Int32(XCALLBACK_OK)
            }
            return HostAPI.complete(reply) { _, _ in .outcome(.cancel) }
        }
        api.reply_decline = { reply in HostAPI.complete(reply) { _, _ in .declined } }

        api.log = { plugin, level, message in
            guard let handle = PluginHandle.from(plugin), let message else { return }
            let text = String(cString: message)
            switch Int(level) {
            case XCALLBACK_LOG_DEBUG: handle.logger.debug("\(text)")
            case XCALLBACK_LOG_INFO: handle.logger.info("\(text)")
            case XCALLBACK_LOG_WARNING: handle.logger.warning("\(text)")
            default: handle.logger.error("\(text)")
            }
        }
        return api
    }

    /// The size of the host API table as of ABI minor `minor`: the table
    /// only grows, so it ends where the next minor's first field begins.
    public static func size(forMinor minor: Int) -> Int {
        switch minor {
        case 0: return MemoryLayout<xcallback_host_api>.offset(of: \.register_function)!
        case 1: return MemoryLayout<xcallback_host_api>.offset(of: \.request_route)!
        default: return MemoryLayout<xcallback_host_api>.size
        }
    }

    /// A string a plug-in replied with. Invalid UTF-8 is repaired (U+FFFD)
    /// and logged, naming the plug-in, the request and the route.
    fileprivate static func text(_ pointer: UnsafePointer<CChar>, _ what: @autoclosure () -> String, _ plugin: String,
                             _ request: NativeRequest) -> String {
        if let valid = String(validatingCString: pointer) { return valid }
        logger.warning("plug-in '\(PrintableText.escaping(plugin))' replied to request \(request.id) (route \(PrintableText.escaping(request.routeText))) with invalid UTF-8 in \(what()); the bytes were replaced with U+FFFD")
        return String(cString: pointer)
    }

    private static func complete(_ reply: xcallback_reply, _ result: (String, NativeRequest) -> HandlerResult) -> Int32 {
        switch replies.complete(reply, with: result) {
        case nil:
            return Int32(XCALLBACK_OK)
        case .alreadyCompleted:
            if let who = replies.describe(reply) {
                logger.warning("\(who), which it had already completed; ignored")
            } else {
                logger.warning("a plug-in completed a request that was already completed long ago, or never given (reply token \(reply.token)); ignored")
            }
            return Int32(XCALLBACK_ERR_ALREADY_COMPLETED)
        case .afterTimeout(let plugin):
            let who = replies.describe(reply) ?? "plug-in '\(PrintableText.escaping(plugin))' completed a request"
            logger.warning("\(who) after it had timed out; the late result is dropped")
            return Int32(XCALLBACK_ERR_ALREADY_COMPLETED)
        }
    }
}
