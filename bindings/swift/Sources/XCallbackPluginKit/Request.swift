import CXCallback
import Synchronization
import XCallbackParameters

/// A request as a Swift handler sees it. A handler may keep it as long as
/// it likes: reads go straight to the host's memory while the handler runs,
/// and a request still held when the handler returns is copied out then.
public struct Request: Sendable {
    @usableFromInline var storage: RequestStorage

    public init(url: String, scheme: String, source: String? = nil,
                parameters: QueryParameters = [], arguments: [String: String] = [:],
                route: String = "", id: UInt64 = 0, attempt: UInt32 = 1) {
        storage = RequestStorage(Fields(url: url, scheme: scheme, source: source, parameters: parameters,
                                        arguments: arguments, route: route, id: id, attempt: attempt))
    }

    /// A view of the host's request for the length of a handler call.
    init(borrowing request: OpaquePointer?, api: UnsafePointer<xcallback_host_api>, argumentNames: [String]) {
        storage = RequestStorage(HostRequest(api: api, request: request), argumentNames: argumentNames)
    }

    /// A view of the host's request in `storage`, already pointed at it.
    @inline(__always)
    init(storage: consuming RequestStorage) {
        self.storage = storage
    }

    /// The request line as received.
    public var url: String {
        get { storage.read({ $0.url }, { $0.url }) }
        set { mutate { $0.url = newValue } }
    }
    /// The scheme, lowercased.
    public var scheme: String {
        get { storage.read({ $0.scheme }, { $0.scheme }) }
        set { mutate { $0.scheme = newValue } }
    }
    /// `x-source`: the name of the calling program, if it gave one.
    public var source: String? {
        get { storage.read({ $0.source }, { $0.source }) }
        set { mutate { $0.source = newValue } }
    }
    /// Action parameters in order (x-callback parameters excluded).
    public var parameters: QueryParameters {
        get { storage.fields.parameters }
        set { mutate { $0.parameters = newValue } }
    }
    /// Route arguments by name (`:name`; `*` for a wildcard's remainder).
    public var arguments: [String: String] {
        get { storage.fields.arguments }
        set { mutate { $0.arguments = newValue } }
    }
    /// The pattern of the route that matched, as registered ("" from a host
    /// older than ABI 1.2).
    public var route: String {
        get { storage.read({ $0.route }, { $0.route }) }
        set { mutate { $0.route = newValue } }
    }
    /// The host's number for this request, the one its log lines carry (0
    /// from a host older than ABI 1.2).
    public var id: UInt64 {
        get { storage.read({ $0.id }, { $0.id }) }
        set { mutate { $0.id = newValue } }
    }
    /// Which attempt at running this request this is: 1, or more when a
    /// durable queue hands out again a request a host stopped before
    /// finishing (1 from a host whose table has no `request_attempt`).
    /// With `id`, what a handler that must not act twice keys on.
    public var attempt: UInt32 {
        get { storage.read({ $0.attempt }, { $0.attempt }) }
        set { mutate { $0.attempt = newValue } }
    }

    /// A required parameter converted to `T`; a missing or malformed value
    /// throws `ParameterError`, which becomes a `ParameterError` outcome.
    /// (Inlinable, as the two below: specialized in the plug-in for `T`.)
    @inlinable
    public func parameter<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T {
        // Decimals, the commonest typed parameter, first try the host's
        // bytes, with no String made (`firstQuickDecimal`).
        if T.self == Double.self, let value = storage.firstQuickDecimal(name) { return value as! T }
        guard let text = storage.firstValue(name) else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .missing)
        }
        return try Self.convert(text, name: name)
    }

    /// An optional parameter converted to `T`; nil when absent.
    @inlinable
    public func optionalParameter<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T? {
        if T.self == Double.self, let value = storage.firstQuickDecimal(name) { return value as? T }
        guard let text = storage.firstValue(name) else { return nil }
        return try Self.convert(text, name: name)
    }

    /// A list parameter: `a,b,c` and/or repeated keys; empty when absent.
    public func list<T: ParameterValue>(_ name: String, of type: T.Type = T.self) throws(ParameterError) -> [T] {
        try parameters.list(name, of: type)
    }

    /// A route argument converted to `T`, Crossroad style.
    public func argument<T: ParameterValue>(_ name: String, as type: T.Type = T.self) throws(ParameterError) -> T {
        guard let text = arguments[name] else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .missing)
        }
        guard let value = T(parameterValue: text) else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .invalid(value: text))
        }
        return value
    }

    @inlinable
    static func convert<T: ParameterValue>(_ text: String, name: String) throws(ParameterError) -> T {
        guard let value = T(parameterValue: text) else {
            throw ParameterError(name: name, expected: T.parameterTypeDescription, problem: .invalid(value: text))
        }
        return value
    }

    private mutating func mutate(_ change: (inout Fields) -> Void) {
        var fields = storage.fields
        change(&fields)
        storage = RequestStorage(fields)
    }

    /// Called when the handler has returned: a request it kept is copied
    /// out of the host's memory, which is about to be reused. Returns the
    /// storage when nothing else holds it, for the next call to reuse.
    /// Consuming: the storage is moved out, not copied (no retain).
    @discardableResult
    consuming func endBorrow() -> RequestStorage? {
        if isKnownUniquelyReferenced(&storage) { return storage }
        storage.copyOut()
        return nil
    }

    /// Copies everything out now (before an async handler's task starts).
    func copyOut() { storage.copyOut() }
}

/// Every field of a request, owned.
struct Fields: Sendable {
    var url: String
    var scheme: String
    var source: String?
    var parameters: QueryParameters
    var arguments: [String: String]
    var route: String
    var id: UInt64
    var attempt: UInt32
}

/// The host's request behind a borrowed `Request`, read through the API
/// table. Plain data, with nothing reference-counted: it is copied out of
/// the storage's state for every read.
struct HostRequest: @unchecked Sendable {
    // @unchecked: valid only while the handler runs; `Request.endBorrow`
    // copies it out before that ends.
    let api: UnsafePointer<xcallback_host_api>
    let request: OpaquePointer?

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }

    var url: String { Self.text(api.pointee.request_url(request)) ?? "" }
    var scheme: String { Self.text(api.pointee.request_scheme(request)) ?? "" }
    var source: String? { Self.text(api.pointee.request_source(request)) }
    /// ABI 1.2's accessors lie past the end of an older host's table.
    private var introspects: Bool { api.pointee.abi_minor >= 2 }
    var route: String { introspects ? Self.text(api.pointee.request_route(request)) ?? "" : "" }
    var id: UInt64 { introspects ? api.pointee.request_id(request) : 0 }
    /// `request_attempt` came late in ABI 1.2, after the table had grown
    /// once already: whether it is there is the table's size, not its minor.
    var attempt: UInt32 {
        Int(api.pointee.api_size) >= Self.attemptEnd ? api.pointee.request_attempt(request) : 1
    }
    private static let attemptEnd = MemoryLayout<xcallback_host_api>.offset(of: \.request_attempt)!
        + MemoryLayout<UnsafeRawPointer>.size

    /// The first value of `name`, by the host's own lookup.
    func firstValue(_ name: String) -> String? {
        withFirstValue(name) { String(decoding: $0, as: UTF8.self) }
    }

    /// Runs `body` on the bytes of the first value of `name`, in the host's
    /// memory; nil when there is none.
    func withFirstValue<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        var length = 0
        let value = name.withCString { api.pointee.request_parameter(request, $0, &length) }
        // Values may hold NUL bytes (%00): read by length, not to the first NUL.
        return value.map { body(UnsafeBufferPointer(start: UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), count: length)) }
    }

    /// Every field, copied; `argumentNames` are the route's (`:name`, `*`).
    func fields(argumentNames: [String]) -> Fields {
        let table = api.pointee
        var parameters: [QueryParameter] = []
        let count = table.request_parameter_count(request)
        parameters.reserveCapacity(count)
        for index in 0..<count {
            var length = 0
            guard let name = table.request_parameter_name(request, index),
                  let value = table.request_parameter_value(request, index, &length) else { continue }
            let bytes = UnsafeRawBufferPointer(start: value, count: length)
            parameters.append(QueryParameter(name: String(cString: name), value: String(decoding: bytes, as: UTF8.self)))
        }
        var arguments: [String: String] = [:]
        for name in argumentNames {
            if let value = Self.text(table.request_argument(request, name)) { arguments[name] = value }
        }
        return Fields(url: url, scheme: scheme, source: source, parameters: QueryParameters(parameters),
                      arguments: arguments, route: route, id: id, attempt: attempt)
    }
}

/// A request's memory: the host's, for the length of a handler call, or
/// its own. The switch happens once, under the lock, so a copy of the
/// request on another thread never sees it half done.
@usableFromInline
final class RequestStorage: Sendable {
    /// Borrowed: `host` set, and `fields` too once something asked for them
    /// all. Owned: `fields` only. A struct, not an enum with payloads: a
    /// spare's reset then overwrites plain data and checks one optional,
    /// where an enum is destroyed through its value witness.
    private struct State: @unchecked Sendable {
        var host: HostRequest?
        var fields: Fields?
    }

    private let state: Mutex<State>
    /// The names of the route's arguments, for copying a borrowed request
    /// out. Kept here, not in `HostRequest`, so that reads copy no array;
    /// a spare storage serves one route only, so they never change.
    private let argumentNames: [String]

    init(_ fields: Fields) {
        state = Mutex(State(host: nil, fields: fields))
        argumentNames = []
    }

    init(_ host: HostRequest, argumentNames: [String]) {
        state = Mutex(State(host: host, fields: nil))
        self.argumentNames = argumentNames
    }

    /// Points a spare storage (no `Request` holds it) at a new call.
    func reset(to host: HostRequest) {
        state.withLock { state in
            state.host = host
            if state.fields != nil { state.fields = nil }
        }
    }

    /// One field, read where it lives.
    func read<T>(_ owned: (Fields) -> T, _ borrowed: (HostRequest) -> T) -> T {
        state.withLock { state in
            if let fields = state.fields { return owned(fields) }
            return borrowed(state.host!)
        }
    }

    /// Every field, copied the first time.
    var fields: Fields {
        state.withLock { state in
            if let fields = state.fields { return fields }
            let copied = state.host!.fields(argumentNames: argumentNames)
            state.fields = copied
            return copied
        }
    }

    @usableFromInline
    func firstValue(_ name: String) -> String? {
        state.withLock { state in
            if let fields = state.fields { return fields.parameters.first(name) }
            return state.host!.firstValue(name)
        }
    }

    /// The first value of `name` as a `Double`, when it is a decimal that
    /// takes the quick conversion (`DecimalSyntax.quickDouble`, which gives
    /// what `Double(parameterValue:)` gives). Read from the host's bytes,
    /// it costs no String; nil leaves the caller to take the general way,
    /// which also says what is wrong with the value.
    @usableFromInline
    func firstQuickDecimal(_ name: String) -> Double? {
        state.withLock { state in
            if let fields = state.fields { return fields.parameters.first(name).flatMap(Double.init(parameterValue:)) }
            return state.host!.withFirstValue(name, DecimalSyntax.quickDouble) ?? nil
        }
    }

    func copyOut() {
        state.withLock { state in
            guard let host = state.host else { return }
            if state.fields == nil { state.fields = host.fields(argumentNames: argumentNames) }
            state.host = nil
        }
    }
}
