import Testing

@testable import XCallbackHost
@testable import XCallbackBridge

/// `CDeclaration(parsing:)`: the supported subset, canonical spelling, and
/// strict errors with line, column and what was expected.
@Suite("C declarations")
struct CDeclarationTests {
    @Test func parsesPow() throws {
        let declaration = try CDeclaration(parsing: "double pow(double x, double y)")
        #expect(declaration.name == "pow")
        #expect(declaration.returnType.type == .double)
        #expect(declaration.parameters.map(\.name) == ["x", "y"])
        #expect(declaration.parameters.map(\.type.type) == [.double, .double])
        #expect(declaration.description == "double pow(double x, double y)")
    }

    @Test func voidParameterListAndVoidReturn() throws {
        let declaration = try CDeclaration(parsing: "void reset(void)")
        #expect(declaration.returnType.type == .void)
        #expect(declaration.parameters.isEmpty)
        #expect(declaration.description == "void reset(void)")
    }

    @Test func whitespaceNewlinesAndATrailingSemicolon() throws {
        let declaration = try CDeclaration(parsing: "  unsigned\tlong\n  hash ( const char*text ,size_t  n ) ;  ")
        #expect(declaration.description == "unsigned long hash(const char *text, size_t n)")
        #expect(declaration.returnType.type == .uint64)
        #expect(declaration.parameters.map(\.type.type) == [.cString, .uint64])
    }

    /// Every supported spelling and the fixed-width type it means on this
    /// target (64-bit Linux: LP64).
    @Test(arguments: [
        ("int8_t", CType.int8, "int8_t"), ("int16_t", .int16, "int16_t"), ("int32_t", .int32, "int32_t"),
        ("int64_t", .int64, "int64_t"), ("uint8_t", .uint8, "uint8_t"), ("uint16_t", .uint16, "uint16_t"),
        ("uint32_t", .uint32, "uint32_t"), ("uint64_t", .uint64, "uint64_t"),
        ("char", CType.integer(bytes: 1, signed: CChar.isSigned), "char"), ("signed char", .int8, "signed char"),
        ("unsigned char", .uint8, "unsigned char"), ("char signed", .int8, "signed char"),
        ("short", .int16, "short"), ("short int", .int16, "short"), ("signed short", .int16, "short"),
        ("unsigned short", .uint16, "unsigned short"), ("unsigned short int", .uint16, "unsigned short"),
        ("int", .int32, "int"), ("signed", .int32, "int"), ("signed int", .int32, "int"),
        ("unsigned", .uint32, "unsigned int"), ("unsigned int", .uint32, "unsigned int"),
        ("long", .int64, "long"), ("long int", .int64, "long"), ("unsigned long", .uint64, "unsigned long"),
        ("long long", .int64, "long long"), ("long long int", .int64, "long long"),
        ("unsigned long long", .uint64, "unsigned long long"), ("long unsigned long int", .uint64, "unsigned long long"),
        ("size_t", .uint64, "size_t"), ("ssize_t", .int64, "ssize_t"), ("intptr_t", .int64, "intptr_t"),
        ("uintptr_t", .uint64, "uintptr_t"), ("ptrdiff_t", .int64, "ptrdiff_t"),
        ("float", .float, "float"), ("double", .double, "double"), ("const double", .double, "double"),
        ("bool", .bool, "bool"), ("_Bool", .bool, "_Bool"),
        ("const char *", .cString, "const char *"), ("char const *", .cString, "const char *"),
        ("const char * const", .cString, "const char *"),
    ])
    func supportedTypes(spelling: String, type: CType, canonical: String) throws {
        let declaration = try CDeclaration(parsing: "\(spelling) f(\(spelling) value)")
        #expect(declaration.returnType.type == type)
        #expect(declaration.returnType.spelling == canonical)
        #expect(declaration.parameters.first?.type.type == type)
        #expect(declaration.parameters.first?.type.spelling == canonical)
    }

    /// Malformed or unsupported declarations: each refused at its own line
    /// and column, with what was expected there.
    @Test(arguments: [
        // missing parameter names
        ("double pow(double, double y)", 1, 18, "expected a name for the double parameter, found ','"),
        ("int f(int)", 1, 10, "expected a name for the int parameter, found ')' (parameter names are required"),
        // unknown identifiers
        ("foo bar(int x)", 1, 1, "unknown type 'foo'"),
        ("int f(int x, widget w)", 1, 14, "unknown type 'widget'"),
        // structs, unions, enums
        ("struct point f(int x)", 1, 1, "struct types are not supported"),
        ("int area(struct rect r)", 1, 10, "struct types are not supported"),
        ("int f(enum color c)", 1, 7, "enum types are not supported"),
        // pointers other than const char *
        ("int f(int *p)", 1, 7, "pointer type 'int *' is not supported"),
        ("void *f(int x)", 1, 1, "pointer type 'void *' is not supported"),
        ("int f(char *s)", 1, 7, "'char *' is not supported: write 'const char *'"),
        ("int f(const char **argv)", 1, 13, "pointers to pointers are not supported"),
        ("int f(const unsigned char *s)", 1, 13, "pointer type 'const unsigned char *' is not supported"),
        // unbalanced parentheses and other structure
        ("double pow(double x, double y", 1, 30, "expected ',' or ')' after parameter 'y', found the end of the declaration (unbalanced '(' at column 11)"),
        ("double pow(double x,", 1, 21, "expected a parameter, found the end of the declaration (unbalanced '(' at column 11)"),
        ("double pow double x)", 1, 12, "expected '(' after the function name 'pow', found 'double'"),
        ("double pow(double x double y)", 1, 21, "expected ',' or ')' after parameter 'x', found 'double'"),
        ("int f(int x))", 1, 13, "expected the end of the declaration after ')', found ')'"),
        ("int f(int x) extra", 1, 14, "expected the end of the declaration after ')', found 'extra'"),
        ("", 1, 1, "expected a type, found the end of the declaration"),
        ("double (x)", 1, 8, "expected the function's name after 'double', found '(' (function pointers are not supported)"),
        // no parameter list, variadic, arrays, function pointers
        ("int f()", 1, 7, "write (void) for a function without parameters"),
        ("int printf(const char *format, ...)", 1, 32, "variadic functions ('...') are not supported"),
        ("int f(int a[4])", 1, 12, "arrays are not supported (parameter 'a')"),
        ("int apply(int (*op)(int), int x)", 1, 15, "function pointers are not supported"),
        // types that do not combine, or are out of the subset
        ("long double f(double x)", 1, 1, "'long double' is not supported"),
        ("unsigned double f(int x)", 1, 1, "'unsigned double' is not a valid C type"),
        ("int f(signed unsigned x)", 1, 7, "'signed unsigned' is not a valid C type"),
        ("int f(unsigned size_t n)", 1, 7, "'unsigned size_t' is not a valid C type"),
        ("int f(short long x)", 1, 7, "'short long' is not a valid C type"),
        ("int f(volatile int x)", 1, 7, "'volatile' is not supported"),
        ("int f(void x)", 1, 7, "'void' must stand alone in a parameter list, as (void)"),
        ("int f(int x, int x)", 1, 18, "duplicate parameter name 'x'"),
        ("int f(int 2x)", 1, 11, "expected a name for the int parameter, found '2x'"),
        ("int f(int x) @", 1, 14, "found '@'"),
        // positions on later lines
        ("double\npow(double x,\n    double)", 3, 11, "expected a name for the double parameter, found ')'"),
    ])
    func malformed(text: String, line: Int, column: Int, message: String) {
        do {
            let parsed = try CDeclaration(parsing: text)
            Issue.record("\(text.debugDescription) parsed as \(parsed)")
        } catch {
            #expect(error.line == line && error.column == column,
                    "\(text.debugDescription): at \(error.line):\(error.column), expected \(line):\(column) — \(error.message)")
            #expect(error.message.contains(message), "\(text.debugDescription): \(error.message)")
            #expect(error.description == "line \(error.line), column \(error.column): \(error.message)")
        }
    }
}
