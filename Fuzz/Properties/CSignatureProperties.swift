import XCallbackBridge

/// Properties of `CDeclaration(parsing:)`, the C signature parser of binding manifests
/// (the `c-signature` fuzz target), on any text:
///
/// 1. It never traps. An error points at a line and column inside the text (1-based;
///    columns count Unicode scalars, and may point just past the end of a line), and
///    its description starts with that position.
/// 2. A declaration that parses is well formed: identifiers for names, distinct
///    parameter names, `void` only as a return type.
/// 3. Its canonical form (`description`) parses to the same declaration and is a fixed
///    point; so does that form with a `;`, or with its tokens spread over lines.
enum CSignatureProperties {
    static func check(_ input: UnsafeBufferPointer<UInt8>) throws(PropertyViolation) {
        let source = text(input)
        let declaration: CDeclaration
        do {
            declaration = try CDeclaration(parsing: source)
        } catch {
            try checkPosition(of: error, in: source)
            return
        }

        try require(isIdentifier(declaration.name), "the function name is an identifier", shown(declaration.name))
        var names: [String] = []
        for parameter in declaration.parameters {
            try require(isIdentifier(parameter.name), "a parameter name is an identifier", shown(parameter.name))
            try require(!names.contains { sameBytes($0, parameter.name) }, "parameter names are distinct", shown(source))
            try require(parameter.type.type != .void, "no parameter is void", shown(source))
            names.append(parameter.name)
        }

        let canonical = declaration.description
        for variant in [canonical, canonical + ";", spreadOverLines(canonical)] {
            let reparsed: CDeclaration
            do {
                reparsed = try CDeclaration(parsing: variant)
            } catch {
                throw PropertyViolation(property: "a canonical declaration parses",
                                        detail: "\(shown(variant)) from \(shown(source)): \(error)")
            }
            try require(reparsed == declaration, "a canonical declaration parses to the same declaration",
                        "\(shown(variant)) gives \(shown(reparsed.description)), from \(shown(source))")
            try require(sameBytes(reparsed.description, canonical), "the canonical form is a fixed point",
                        "\(shown(canonical)) -> \(shown(reparsed.description))")
        }
    }

    private static func checkPosition(of error: CDeclarationError, in source: String) throws(PropertyViolation) {
        let lines = Array(source.unicodeScalars).split(separator: "\n", omittingEmptySubsequences: false)
        try require(error.line >= 1 && error.line <= lines.count, "an error's line is inside the text",
                    "line \(error.line) of \(lines.count) in \(shown(source)): \(error.message)")
        try require(error.column >= 1 && error.column <= lines[error.line - 1].count + 1, "an error's column is inside its line",
                    "column \(error.column) of line \(error.line) (\(lines[error.line - 1].count) scalars) in \(shown(source)): \(error.message)")
        try require(!error.message.isEmpty, "an error has a message")
        try require(error.description.hasPrefix("line \(error.line), column \(error.column): "),
                    "an error's description starts with its position", shown(error.description))
    }

    /// The same tokens with a newline and a tab around every punctuation mark.
    private static func spreadOverLines(_ declaration: String) -> String {
        var output = ""
        for character in declaration {
            if "(),*".contains(character) {
                output += "\n\t\(character)\n"
            } else {
                output.append(character)
            }
        }
        return output
    }

    private static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
