import CXCallback

/// The size and offset of every field of the ABI's structs, as this host was
/// built (`xcallback sdk --layout`): what an author of a binding in another
/// language checks a hand-written struct against.
public enum ABILayout {
    public struct Field: Sendable {
        public var type: String
        public var name: String
        public var offset: Int
        public var size: Int
    }

    /// The ABI version the layout is for.
    public static let version = "\(XCALLBACK_ABI_MAJOR).\(XCALLBACK_ABI_MINOR)"

    /// Each struct's size, by C name.
    public static let sizes: [(type: String, size: Int)] = [
        ("xcallback_descriptor", MemoryLayout<xcallback_descriptor>.size),
        ("xcallback_host_api", MemoryLayout<xcallback_host_api>.size),
        ("xcallback_param", MemoryLayout<xcallback_param>.size),
        ("xcallback_reply", MemoryLayout<xcallback_reply>.size),
    ]

    public static var fields: [Field] {
        let pointer = MemoryLayout<UnsafeRawPointer>.size
        func descriptor(_ name: String, _ path: PartialKeyPath<xcallback_descriptor>, _ size: Int) -> Field {
            Field(type: "xcallback_descriptor", name: name, offset: MemoryLayout<xcallback_descriptor>.offset(of: path)!, size: size)
        }
        func api(_ name: String, _ path: PartialKeyPath<xcallback_host_api>, _ size: Int = pointer) -> Field {
            Field(type: "xcallback_host_api", name: name, offset: MemoryLayout<xcallback_host_api>.offset(of: path)!, size: size)
        }
        return [
            descriptor("magic", \.magic, 4), descriptor("abi_major", \.abi_major, 2),
            descriptor("abi_minor", \.abi_minor, 2), descriptor("descriptor_size", \.descriptor_size, 4),
            descriptor("host_api_size", \.host_api_size, 4), descriptor("name", \.name, pointer),
            descriptor("version", \.version, pointer), descriptor("description", \.description, pointer),
            api("api_size", \.api_size, 4), api("abi_major", \.abi_major, 2), api("abi_minor", \.abi_minor, 2),
            api("register_action", \.register_action), api("register_controller_action", \.register_controller_action),
            api("register_pattern", \.register_pattern), api("request_url", \.request_url),
            api("request_scheme", \.request_scheme), api("request_source", \.request_source),
            api("request_argument", \.request_argument), api("request_parameter_count", \.request_parameter_count),
            api("request_parameter_name", \.request_parameter_name), api("request_parameter_value", \.request_parameter_value),
            api("request_parameter", \.request_parameter), api("reply_success", \.reply_success),
            api("reply_error", \.reply_error), api("reply_cancel", \.reply_cancel), api("reply_decline", \.reply_decline),
            api("log", \.log), api("register_function", \.register_function), api("request_route", \.request_route),
            api("request_argument_count", \.request_argument_count), api("request_argument_name", \.request_argument_name),
            api("request_argument_value", \.request_argument_value), api("request_id", \.request_id),
            api("request_attempt", \.request_attempt),
        ]
    }
}
