/// Why a C declaration was refused: where (1-based line and column, counted
/// in characters) and what was expected there.
///
/// `description` reads "line 1, column 12: expected a name for the double
/// parameter (parameter names are the URL parameter names)".
public struct CDeclarationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var message: String

    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String { "line \(line), column \(column): \(message)" }
}
