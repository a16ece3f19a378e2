import XCallbackSystem

/// Why a plug-in file was refused. Every message names the file.
public struct PluginLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// `dlopen` failed: not a shared library, truncated, missing dependency.
        case cannotOpen(String)
        /// A shared library without `xcallback_plugin_descriptor`.
        case notAPlugin
        /// The descriptor is present but a field is wrong; names the field.
        case badDescriptor(field: String, problem: String)
        case missingRegister
        case registrationFailed(status: Int32)
        /// Group/other-writable, or owned by another non-root user.
        case insecure(String)
        case notRegularFile
        /// Another file with the same plug-in name is already loaded.
        case duplicateName(String)
        /// The plug-in crashed while being loaded or checked (child process).
        case crashed(String)
        /// A binding manifest (`.xcallback.toml`) is malformed, or its
        /// library or one of its functions cannot be bound; says which and why.
        case badManifest(String)
        /// Its capability file (`NAME.caps.toml`) is malformed; says where.
        case badCapabilities(String)
        case other(String)
    }

    public var path: String
    public var reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    /// The reason alone, without the path (for a message about another file).
    public var reasonText: String { String(description.dropFirst(shownPath.count + 2)) }

    /// The path as printed: control characters escaped.
    private var shownPath: String { PrintableText.escaping(path) }

    /// What an `XCALLBACK_ERR_*` status a plug-in passed on means.
    public static func meaning(of status: Int32) -> String? {
        switch status {
        case -1: "XCALLBACK_ERR_INVALID_ARGUMENT: a registration had a NULL or malformed argument"
        case -2: "XCALLBACK_ERR_BAD_PATTERN: a route pattern does not parse"
        case -3: "XCALLBACK_ERR_ROUTE_CONFLICT: another plug-in, loaded first, owns a route of the same shape"
        case -6: "XCALLBACK_ERR_BAD_DECLARATION: a function declaration was refused"
        default: nil
        }
    }

    /// Printed on one line, whatever the reason holds: much of it comes
    /// from the plug-in file (`dlerror` names its symbols and libraries) or
    /// from a process that ran its code (a probe's report), so it is escaped
    /// and cut at 4 KiB like everything else a plug-in writes.
    public var description: String {
        "\(shownPath): \(PrintableText.escaping(String(reasonBody.prefix(4096))))"
    }

    private var reasonBody: String {
        switch reason {
        case .cannotOpen(let message): return "cannot load: \(message)"
        case .notAPlugin: return "not an xcallback plug-in (no xcallback_plugin_descriptor symbol)"
        case .badDescriptor(let field, let problem): return "descriptor field '\(field)' \(problem)"
        case .missingRegister: return "no xcallback_plugin_register symbol"
        case .registrationFailed(let status):
            return "xcallback_plugin_register failed with status \(status)\(Self.meaning(of: status).map { " (\($0))" } ?? "")"
        case .insecure(let why): return "refused: \(why)"
        case .notRegularFile: return "not a regular file"
        case .duplicateName(let other): return "a plug-in with the same name is already loaded from \(other)"
        case .crashed(let how): return "crashed while loading (\(how))"
        case .badManifest(let message): return "binding manifest: \(message)"
        case .badCapabilities(let message): return "capability file: \(message)"
        case .other(let message): return message
        }
    }
}
