import TOMLKit
import XCallbackRouting

/// Why a binding manifest was refused. `description` says what and where,
/// without the file's path (``PluginLoadError`` adds it).
public struct ManifestError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// A binding manifest: a declarative plug-in (`NAME.xcallback.toml` in a
/// plug-in directory) that exposes functions of an existing shared library
/// as actions, with no code of its own:
///
/// ```toml
/// name = "math"
/// version = "1.0.0"
/// description = "libm functions as x-callback-url actions"
/// library = "libm.so.6"
/// scheme = "math"
/// [[function]]
/// declaration = "double pow(double x, double y)"
/// [[function]]
/// declaration = "double cbrt(double x)"
/// action = "cuberoot"   # optional: the route's action name (default: the C name)
/// result = "root"       # optional: the outcome parameter (default: result)
/// ```
///
/// Each function becomes `scheme://x-callback-url/<action>`. Only declared
/// functions are reachable: a URL never names a symbol. Unknown keys are
/// errors (a typo must not silently drop a setting).
public struct BindingManifest: Sendable, Equatable {
    /// The file name suffix the host loads as a manifest.
    public static let suffix = ".xcallback.toml"

    /// One declared function.
    public struct Function: Sendable, Equatable {
        public var declaration: CDeclaration
        /// The action name in the route; the C name unless given.
        public var action: String
        /// The outcome parameter holding the return value; nil means `result`.
        public var result: String?
        /// Its route, `scheme://x-callback-url/<action>`.
        public var route: RoutePattern
    }

    public var name: String
    public var version: String
    public var summary: String
    /// As written: a name for the dynamic linker's search (`libm.so.6`), an
    /// absolute path, or a path relative to the manifest's directory.
    public var library: String
    public var scheme: String
    public var functions: [Function]

    private static let topKeys = ["name", "version", "description", "library", "scheme", "function"]
    private static let functionKeys = ["declaration", "action", "result"]

    /// Parses and validates a manifest's text. Every declaration is parsed
    /// here, so an unsupported type is refused at load time, never at call time.
    public init(parsing text: String) throws(ManifestError) {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            let position = error.source.begin
            throw ManifestError("invalid TOML at line \(position.line), column \(position.column): \(error.description)")
        } catch {
            throw ManifestError("invalid TOML: \(error)")
        }
        try Self.refuseUnknownKeys(in: table, allowed: Self.topKeys, context: "")

        name = try Self.string("name", in: table, context: "")
        guard PluginLoader.isValidName(name) else {
            throw ManifestError("'name' is \"\(name)\"; use 1-64 characters of A-Z a-z 0-9 . _ -")
        }
        version = try Self.optionalString("version", in: table, context: "") ?? ""
        summary = try Self.optionalString("description", in: table, context: "") ?? ""
        library = try Self.string("library", in: table, context: "")
        guard !library.isEmpty, !library.utf8.contains(0) else {
            throw ManifestError("'library' must name a shared library, such as \"libm.so.6\"")
        }
        scheme = try Self.string("scheme", in: table, context: "")

        guard let list = table["function"] else {
            throw ManifestError("no functions: add at least one [[function]] table with a 'declaration'")
        }
        guard let array = list.array else {
            throw ManifestError("'function' must be an array of tables ([[function]]), not \(list.type)")
        }
        guard !array.isEmpty else {
            throw ManifestError("no functions: add at least one [[function]] table with a 'declaration'")
        }
        var functions: [Function] = []
        for (index, element) in array.enumerated() {
            let context = "function \(index + 1): "
            guard let entry = element.table else {
                throw ManifestError("\(context)must be a table ([[function]]), not \(element.type)")
            }
            try Self.refuseUnknownKeys(in: entry, allowed: Self.functionKeys, context: context)
            let text = try Self.string("declaration", in: entry, context: context)
            let declaration: CDeclaration
            do {
                declaration = try CDeclaration(parsing: text)
            } catch {
                throw ManifestError("\(context)declaration \"\(text)\": \(error)")
            }
            let action = try Self.optionalString("action", in: entry, context: context) ?? declaration.name
            let result = try Self.optionalString("result", in: entry, context: context)
            if let result, result.isEmpty || result.utf8.contains(0) {
                throw ManifestError("\(context)'result' must be a non-empty parameter name")
            }
            let route: RoutePattern
            do {
                route = try RoutePattern.action(scheme: scheme, action: action)
            } catch {
                throw ManifestError("\(context)cannot make a route of scheme \"\(scheme)\" and action \"\(action)\": \(error)")
            }
            if let other = functions.firstIndex(where: { $0.route == route }) {
                throw ManifestError("\(context)action '\(action)' is already declared by function \(other + 1)")
            }
            functions.append(Function(declaration: declaration, action: action, result: result, route: route))
        }
        self.functions = functions
    }

    // MARK: typed reads

    private static func refuseUnknownKeys(in table: TOMLTable, allowed: [String], context: String) throws(ManifestError) {
        for key in table.keys where !allowed.contains(key) {
            throw ManifestError("\(context)unknown key '\(key)' (expected \(allowed.joined(separator: ", ")))")
        }
    }

    private static func string(_ key: String, in table: TOMLTable, context: String) throws(ManifestError) -> String {
        guard let value = try optionalString(key, in: table, context: context) else {
            throw ManifestError("\(context)missing required key '\(key)'")
        }
        return value
    }

    private static func optionalString(_ key: String, in table: TOMLTable, context: String) throws(ManifestError) -> String? {
        guard let value = table[key] else { return nil }
        guard let text = value.string else {
            throw ManifestError("\(context)'\(key)' must be a string, not \(article(value.type.description)) \(value.type)")
        }
        return text
    }

    private static func article(_ word: String) -> String {
        word.first.map { "aeiou".contains($0) } == true ? "an" : "a"
    }
}
