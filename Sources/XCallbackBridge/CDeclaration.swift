/// One named parameter of a bound function: its C type and the name a URL
/// passes it by.
public struct CParameter: Sendable, Hashable, CustomStringConvertible {
    public var type: CTypeName
    /// The URL parameter (or route argument) name.
    public var name: String

    public init(type: CTypeName, name: String) {
        self.type = type
        self.name = name
    }

    /// `double x`, `const char *s`.
    public var description: String {
        type.spelling.hasSuffix("*") ? type.spelling + name : type.spelling + " " + name
    }
}

/// A C function declaration in the subset the host can call through libffi:
/// `double pow(double x, double y)`, `size_t strlen(const char *s)`,
/// `void reset(void)`.
///
/// The subset: a return type, the function's name, and a parenthesised
/// parameter list in which every parameter has a name (the names are the URL
/// parameter names), or `(void)`. Types are integers (`int8_t` … `uint64_t`,
/// `char`, `short`, `int`, `long`, `long long` with `signed`/`unsigned`,
/// `size_t`, `ssize_t`, `intptr_t`, `uintptr_t`, `ptrdiff_t`), `float`,
/// `double`, `bool`/`_Bool`, `const char *` (an input string), and `void` as a
/// return type. Everything else (other pointers, structs, unions, enums,
/// arrays, function pointers, `long double`, variadic `...`) is refused with
/// the line and column where it appears. A trailing `;` is allowed.
public struct CDeclaration: Sendable, Hashable, CustomStringConvertible {
    public var returnType: CTypeName
    /// The C name: the symbol a manifest looks up, and the default action name.
    public var name: String
    public var parameters: [CParameter]

    public init(returnType: CTypeName, name: String, parameters: [CParameter]) {
        self.returnType = returnType
        self.name = name
        self.parameters = parameters
    }

    /// Parses `text` strictly; see the type's documentation for the subset.
    public init(parsing text: String) throws(CDeclarationError) {
        var parser = try CDeclarationParser(text)
        self = try parser.parseDeclaration()
    }

    /// The declaration in canonical form: `double pow(double x, double y)`.
    public var description: String {
        let list = parameters.isEmpty ? "void" : parameters.map(\.description).joined(separator: ", ")
        let head = returnType.spelling.hasSuffix("*") ? returnType.spelling + name : returnType.spelling + " " + name
        return "\(head)(\(list))"
    }
}
