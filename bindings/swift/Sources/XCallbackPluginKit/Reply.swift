import CXCallback
import XCallbackParameters

/// What a Swift handler answers. Errors may also be thrown: see `PluginError`.
public struct Reply: Sendable, Equatable {
    @usableFromInline
    enum Kind: Sendable, Equatable {
        case success(SuccessParameters)
        case error(code: String, message: String, domain: String?)
        case cancel
        case decline
    }

    @usableFromInline let kind: Kind

    @usableFromInline
    init(kind: Kind) {
        self.kind = kind
    }

    /// Success with output parameters, in the order written:
    /// `.success(["result": "6.2"])`. Inlinable, so that the plug-in sees
    /// where the literal's strings go.
    @inlinable @inline(__always)
    public static func success(_ parameters: KeyValuePairs<String, String> = [:]) -> Reply {
        Reply(kind: .success(SuccessParameters(parameters)))
    }

    /// Success with output parameters built at run time.
    public static func success(_ parameters: [QueryParameter]) -> Reply {
        Reply(kind: .success(SuccessParameters(parameters)))
    }

    /// An error; `domain` defaults to the plug-in's name.
    public static func error(code: String, message: String, domain: String? = nil) -> Reply {
        Reply(kind: .error(code: code, message: message, domain: domain))
    }

    /// The request was cancelled: the `x-cancel` callback fires.
    public static let cancel = Reply(kind: .cancel)

    /// Not for this handler after all: the host tries the next matching route.
    public static let decline = Reply(kind: .decline)
}

/// An error a handler can throw to choose its outcome's code and message.
/// Any other thrown error becomes an error outcome whose code is the
/// error's type name; either way the domain is the plug-in's name unless
/// the error names another (the one rule in C, Swift and Rust).
public protocol PluginError: Error {
    var errorCode: String { get }
    var errorMessage: String { get }
    /// nil: the plug-in's name.
    var errorDomain: String? { get }
}

extension PluginError {
    public var errorDomain: String? { nil }
}

extension Reply {
    /// The outcome a thrown error stands for.
    static func from(_ error: any Error) -> Reply {
        switch error {
        case let error as ParameterError:
            // The host's code, in the plug-in's domain: the plug-in found it
            // (docs/plugin-guide.md, "Errors, cancel and decline").
            return .error(code: "ParameterError", message: error.message)
        case let error as PluginError:
            return .error(code: error.errorCode, message: error.errorMessage, domain: error.errorDomain)
        default:
            return .error(code: String(describing: type(of: error)), message: String(describing: error))
        }
    }
}

/// A success's output parameters. The commonest answer has exactly one
/// (`.success(["result": value])`); it is kept inline, since an array
/// would be allocated and freed again for every reply.
@usableFromInline
struct SuccessParameters: Sendable, Equatable {
    @usableFromInline
    enum Storage: Sendable {
        case one(QueryParameter)
        case many([QueryParameter])
    }

    @usableFromInline let storage: Storage

    /// Always inlined, the `.many` case kept out: in the plug-in, the
    /// optimizer then sees the literal's array and takes its strings from
    /// it, instead of destroying the array through the generic runtime.
    @inlinable @inline(__always)
    init(_ pairs: KeyValuePairs<String, String>) {
        // By subscript: `first` copies the pairs' array (a retain).
        if pairs.count == 1 {
            let only = pairs[pairs.startIndex]
            storage = .one(QueryParameter(name: only.key, value: only.value))
        } else {
            storage = .many(Self.array(of: pairs))
        }
    }

    @usableFromInline
    static func array(of pairs: KeyValuePairs<String, String>) -> [QueryParameter] {
        pairs.map { QueryParameter(name: $0.key, value: $0.value) }
    }

    /// Parameters already in an array are kept as they are.
    @usableFromInline
    init(_ parameters: [QueryParameter]) {
        storage = .many(parameters)
    }

    /// Runs `body` on the parameters, in order, where they are.
    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<QueryParameter>) -> R) -> R {
        switch storage {
        case .one(let parameter):
            return withUnsafePointer(to: parameter) { body(UnsafeBufferPointer(start: $0, count: 1)) }
        case .many(let parameters):
            return parameters.withUnsafeBufferPointer(body)
        }
    }

    /// Completes `reply` with these parameters. One is handed over in
    /// place, borrowed from the reply: a buffer pointer to it would copy it.
    func send(through sender: ReplySender, to reply: xcallback_reply) {
        switch storage {
        case .one(let parameter):
            sender.sendSuccess(name: parameter.name, value: parameter.value, to: reply)
        case .many(let parameters):
            parameters.withUnsafeBufferPointer { sender.sendSuccess($0, to: reply) }
        }
    }

    @usableFromInline
    static func == (lhs: SuccessParameters, rhs: SuccessParameters) -> Bool {
        lhs.withUnsafeBufferPointer { left in rhs.withUnsafeBufferPointer { left.elementsEqual($0) } }
    }
}
