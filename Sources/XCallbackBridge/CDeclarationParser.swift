/// The tokenizer and recursive-descent parser behind
/// ``CDeclaration/init(parsing:)``. Strict: anything outside the supported
/// subset is an error at its own line and column, never a guess.
public struct CDeclarationParser {
    /// One token, with the position of its first character.
    public struct Token {
        public enum Kind: Equatable {
            case identifier(String)
            case leftParen, rightParen, comma, star, ellipsis, semicolon
            case leftBracket, rightBracket
            /// Anything else (a number, a stray character), as written.
            case other(String)
            case end
        }

        public var kind: Kind
        public var line: Int
        public var column: Int

        /// How a message names the token: "'('", "'foo'", "the end of the declaration".
        public var shown: String {
            switch kind {
            case .identifier(let word): return "'\(word)'"
            case .leftParen: return "'('"
            case .rightParen: return "')'"
            case .comma: return "','"
            case .star: return "'*'"
            case .ellipsis: return "'...'"
            case .semicolon: return "';'"
            case .leftBracket: return "'['"
            case .rightBracket: return "']'"
            case .other(let text): return "'\(text)'"
            case .end: return "the end of the declaration"
            }
        }
    }

    private var tokens: [Token]
    private var index = 0

    public init(_ text: String) throws(CDeclarationError) {
        tokens = try Self.tokenize(text)
    }

    // MARK: tokens

    private static func tokenize(_ text: String) throws(CDeclarationError) -> [Token] {
        var tokens: [Token] = []
        var line = 1
        var column = 1
        let scalars = Array(text.unicodeScalars)
        var position = 0
        func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "_" || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
        }
        func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
            isIdentifierStart(scalar) || ("0"..."9").contains(scalar)
        }
        while position < scalars.count {
            let scalar = scalars[position]
            let start = (line, column)
            func add(_ kind: Token.Kind, length: Int) {
                tokens.append(Token(kind: kind, line: start.0, column: start.1))
                position += length
                column += length
            }
            switch scalar {
            case "\n":
                position += 1
                line += 1
                column = 1
            case " ", "\t", "\r":
                position += 1
                column += 1
            case "(": add(.leftParen, length: 1)
            case ")": add(.rightParen, length: 1)
            case ",": add(.comma, length: 1)
            case "*": add(.star, length: 1)
            case ";": add(.semicolon, length: 1)
            case "[": add(.leftBracket, length: 1)
            case "]": add(.rightBracket, length: 1)
            case ".":
                if position + 2 < scalars.count, scalars[position + 1] == ".", scalars[position + 2] == "." {
                    add(.ellipsis, length: 3)
                } else {
                    add(.other("."), length: 1)
                }
            default:
                if isIdentifierStart(scalar) || ("0"..."9").contains(scalar) {
                    var end = position
                    while end < scalars.count, isIdentifierPart(scalars[end]) { end += 1 }
                    var word = ""
                    word.unicodeScalars.append(contentsOf: scalars[position..<end])
                    add(isIdentifierStart(scalar) ? .identifier(word) : .other(word), length: end - position)
                } else {
                    add(.other(String(scalar)), length: 1)
                }
            }
        }
        tokens.append(Token(kind: .end, line: line, column: column))
        return tokens
    }

    private var current: Token { tokens[index] }

    private func peek(_ offset: Int = 0) -> Token {
        tokens[min(index + offset, tokens.count - 1)]
    }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func error(_ token: Token, _ message: String) -> CDeclarationError {
        CDeclarationError(line: token.line, column: token.column, message: message)
    }

    // MARK: grammar

    /// declaration := type name '(' parameters ')' ';'? end
    public mutating func parseDeclaration() throws(CDeclarationError) -> CDeclaration {
        let returnType = try parseType()
        let nameToken = current
        guard case .identifier(let name) = nameToken.kind else {
            if nameToken.kind == .leftParen {
                throw error(nameToken, "expected the function's name after '\(returnType.spelling)', found '(' (function pointers are not supported)")
            }
            throw error(nameToken, "expected the function's name after '\(returnType.spelling)', found \(nameToken.shown)")
        }
        advance()
        guard current.kind == .leftParen else {
            throw error(current, "expected '(' after the function name '\(name)', found \(current.shown)")
        }
        let open = current
        advance()
        let parameters = try parseParameters(open: open)
        if current.kind == .semicolon { advance() }
        guard current.kind == .end else {
            throw error(current, "expected the end of the declaration after ')', found \(current.shown)")
        }
        return CDeclaration(returnType: returnType, name: name, parameters: parameters)
    }

    /// parameters := 'void' ')' | parameter (',' parameter)* ')'
    private mutating func parseParameters(open: Token) throws(CDeclarationError) -> [CParameter] {
        if case .identifier("void") = current.kind, peek(1).kind == .rightParen {
            advance()
            advance()
            return []
        }
        if current.kind == .rightParen {
            throw error(current, "expected a parameter list, found ')'; write (void) for a function without parameters")
        }
        var parameters: [CParameter] = []
        while true {
            if current.kind == .ellipsis {
                throw error(current, "variadic functions ('...') are not supported: declare a fixed parameter list")
            }
            if current.kind == .end {
                throw error(current, "expected a parameter, found the end of the declaration (unbalanced '(' at column \(open.column))")
            }
            let typeToken = current
            let type = try parseType()
            if type.type == .void {
                throw error(typeToken, "'void' must stand alone in a parameter list, as (void)")
            }
            let nameToken = current
            let name: String
            switch nameToken.kind {
            case .identifier(let word):
                name = word
            case .leftParen:
                throw error(nameToken, "expected a name for the \(type.spelling) parameter, found '(' (function pointers are not supported)")
            default:
                throw error(nameToken, "expected a name for the \(type.spelling) parameter, found \(nameToken.shown) (parameter names are required: they are the URL parameter names)")
            }
            advance()
            if current.kind == .leftBracket {
                throw error(current, "arrays are not supported (parameter '\(name)')")
            }
            if parameters.contains(where: { $0.name == name }) {
                throw error(nameToken, "duplicate parameter name '\(name)'")
            }
            parameters.append(CParameter(type: type, name: name))
            switch current.kind {
            case .comma:
                advance()
            case .rightParen:
                advance()
                return parameters
            case .end:
                throw error(current, "expected ',' or ')' after parameter '\(name)', found the end of the declaration (unbalanced '(' at column \(open.column))")
            default:
                throw error(current, "expected ',' or ')' after parameter '\(name)', found \(current.shown)")
            }
        }
    }

    /// type := (specifier | 'const')+ ('*' 'const'?)*
    ///
    /// Specifiers are read while they are type words; the first other word
    /// ends the type (it is the name that follows). A first word that is not
    /// a type word is an unknown type.
    private mutating func parseType() throws(CDeclarationError) -> CTypeName {
        var words: [(word: String, token: Token)] = []
        var isConst = false
        while case .identifier(let word) = current.kind {
            if word == "const" {
                isConst = true
                advance()
                continue
            }
            if ["struct", "union", "enum"].contains(word) {
                throw error(current, "\(word) types are not supported: only integers, floating point, bool and const char * can be passed")
            }
            if ["volatile", "restrict", "_Atomic", "_Complex", "_Imaginary", "static", "extern", "inline",
                "register", "auto", "typedef", "__int128", "wchar_t", "char16_t", "char32_t"].contains(word) {
                throw error(current, "'\(word)' is not supported in a bound function's declaration")
            }
            guard Self.specifiers.contains(word) || Self.typedefNames[word] != nil else {
                if words.isEmpty {
                    throw error(current, "unknown type '\(word)': supported are the integer types, float, double, bool and const char *")
                }
                break
            }
            words.append((word, current))
            advance()
        }
        guard let start = words.first else {
            throw error(current, "expected a type, found \(current.shown)")
        }
        var resolved = try resolve(words.map(\.word), at: start.token)
        var stars = 0
        while current.kind == .star {
            stars += 1
            advance()
            while case .identifier("const") = current.kind { advance() }
        }
        if stars > 0 {
            let pointer = resolved.spelling + " " + String(repeating: "*", count: stars)
            let shown = isConst ? "const " + pointer : pointer
            guard stars == 1 else {
                throw error(start.token, "pointers to pointers are not supported ('\(shown)')")
            }
            guard words.count == 1, words[0].word == "char" else {
                throw error(start.token, "pointer type '\(shown)' is not supported: the only pointer a bound function may take is 'const char *' (an input string)")
            }
            guard isConst else {
                throw error(start.token, "'char *' is not supported: write 'const char *' (the function may only read the string)")
            }
            resolved = CTypeName(type: .cString, spelling: "const char *")
        }
        return resolved
    }

    // MARK: type words

    /// Keywords that combine into the arithmetic types.
    private static let specifiers: Set<String> = [
        "void", "char", "short", "int", "long", "signed", "unsigned", "float", "double", "_Bool", "bool",
    ]

    /// Standard typedef names, which stand alone.
    private static let typedefNames: [String: CType] = [
        "int8_t": .int8, "int16_t": .int16, "int32_t": .int32, "int64_t": .int64,
        "uint8_t": .uint8, "uint16_t": .uint16, "uint32_t": .uint32, "uint64_t": .uint64,
        "size_t": CType.integer(bytes: MemoryLayout<Int>.size, signed: false),
        "uintptr_t": CType.integer(bytes: MemoryLayout<UInt>.size, signed: false),
        "ssize_t": CType.integer(bytes: MemoryLayout<Int>.size, signed: true),
        "intptr_t": CType.integer(bytes: MemoryLayout<Int>.size, signed: true),
        "ptrdiff_t": CType.integer(bytes: MemoryLayout<Int>.size, signed: true),
    ]

    /// Combines the specifier words of one type (in any order, as C allows)
    /// into a type, or says why they do not combine.
    private func resolve(_ words: [String], at token: Token) throws(CDeclarationError) -> CTypeName {
        let written = words.joined(separator: " ")
        func invalid() -> CDeclarationError {
            error(token, "'\(written)' is not a valid C type")
        }
        if let typedef = words.first.flatMap({ Self.typedefNames[$0] }) {
            guard words.count == 1 else { throw invalid() }
            return CTypeName(type: typedef, spelling: written)
        }
        var counts: [String: Int] = [:]
        for word in words {
            guard Self.specifiers.contains(word) else { throw invalid() }
            counts[word, default: 0] += 1
        }
        let count = { (word: String) in counts[word] ?? 0 }
        let alone = ["void", "_Bool", "bool", "float"]
        for word in alone where count(word) > 0 {
            guard words.count == 1 else { throw invalid() }
            switch word {
            case "void": return CTypeName(type: .void, spelling: "void")
            case "float": return CTypeName(type: .float, spelling: "float")
            default: return CTypeName(type: .bool, spelling: word)
            }
        }
        if count("double") > 0 {
            if count("long") > 0 && words.count == 2 && count("double") == 1 {
                throw error(token, "'long double' is not supported (libffi cannot pass it portably)")
            }
            guard words.count == 1 else { throw invalid() }
            return CTypeName(type: .double, spelling: "double")
        }
        let signed = count("signed"), unsigned = count("unsigned")
        guard signed + unsigned <= 1 else { throw invalid() }
        let sign = unsigned == 1 ? "unsigned " : ""
        if count("char") > 0 {
            guard count("char") == 1, words.count == 1 + signed + unsigned else { throw invalid() }
            if unsigned == 1 { return CTypeName(type: .uint8, spelling: "unsigned char") }
            if signed == 1 { return CTypeName(type: .int8, spelling: "signed char") }
            return CTypeName(type: .integer(bytes: 1, signed: CChar.isSigned), spelling: "char")
        }
        let short = count("short"), long = count("long"), int = count("int")
        guard short <= 1, long <= 2, int <= 1, short == 0 || long == 0 else { throw invalid() }
        let isSigned = unsigned == 0
        if short == 1 {
            return CTypeName(type: .integer(bytes: MemoryLayout<CShort>.size, signed: isSigned), spelling: sign + "short")
        }
        if long == 2 {
            return CTypeName(type: .integer(bytes: MemoryLayout<CLongLong>.size, signed: isSigned), spelling: sign + "long long")
        }
        if long == 1 {
            return CTypeName(type: .integer(bytes: MemoryLayout<CLong>.size, signed: isSigned), spelling: sign + "long")
        }
        return CTypeName(type: .integer(bytes: MemoryLayout<CInt>.size, signed: isSigned), spelling: sign + "int")
    }
}

extension CType {
    /// The fixed-width integer type of `bytes` bytes.
    public static func integer(bytes: Int, signed: Bool) -> CType {
        switch (bytes, signed) {
        case (1, true): return .int8
        case (2, true): return .int16
        case (4, true): return .int32
        case (1, false): return .uint8
        case (2, false): return .uint16
        case (4, false): return .uint32
        case (_, true): return .int64
        case (_, false): return .uint64
        }
    }
}
