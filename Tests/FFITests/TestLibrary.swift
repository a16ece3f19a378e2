import Foundation

@testable import XCallbackHost
@testable import XCallbackSystem

/// A small C library built once per test process with `cc -shared -fPIC`,
/// and a binding manifest for it, for the integer widths and every other
/// supported type. It sits in its own directory, named relatively
/// (`./libffitest.so`) by the manifest beside it.
enum TestLibrary {
    static let source = #"""
    #include <stdbool.h>
    #include <stddef.h>
    #include <stdint.h>
    #include <string.h>

    int8_t neg8(int8_t x) { return (int8_t)-x; }
    int8_t id8(int8_t x) { return x; }
    uint8_t idu8(uint8_t x) { return x; }
    int16_t id16(int16_t x) { return x; }
    uint16_t idu16(uint16_t x) { return x; }
    int32_t add32(int32_t a, int32_t b) { return a + b; }
    uint32_t idu32(uint32_t x) { return x; }
    int64_t id64(int64_t x) { return x; }
    uint64_t inc64(uint64_t x) { return x + 1; }
    uint64_t idu64(uint64_t x) { return x; }
    bool not_(bool b) { return !b; }
    float half(float x) { return x / 2; }
    double mul(double a, double b) { return a * b; }
    char idc(char c) { return c; }
    signed char idsc(signed char c) { return c; }
    unsigned char iduc(unsigned char c) { return c; }
    short ids(short x) { return x; }
    unsigned short idus(unsigned short x) { return x; }
    int idi(int x) { return x; }
    unsigned int idui(unsigned int x) { return x; }
    long idl(long x) { return x; }
    unsigned long idul(unsigned long x) { return x; }
    long long idll(long long x) { return x; }
    unsigned long long idull(unsigned long long x) { return x; }
    size_t idz(size_t x) { return x; }
    size_t length(const char *s) { return strlen(s); }
    const char *greeting(void) { return "hello, world"; }
    const char *nothing(void) { return NULL; }
    const char *echo(const char *s) { return s; }

    static int counter;
    void touch(void) { counter++; }
    int touched(void) { return counter; }

    /* Ten arguments of mixed types: ordering and widths all the way through. */
    double mixed(int8_t a, uint16_t b, int32_t c, int64_t d, float e, double f, bool g, uint8_t h,
                 const char *s, uint64_t i)
    {
        return a + b + c + (double)d + e + f + (g ? 1000 : 0) + h + (double)strlen(s) + (double)i;
    }

    /* Present in the library but declared by no manifest. */
    int secret(void) { return 42; }
    """#

    /// Each (declaration, extra TOML lines) the manifest binds.
    static let functions: [(String, String)] = [
        ("int8_t neg8(int8_t x)", ""), ("int8_t id8(int8_t x)", ""), ("uint8_t idu8(uint8_t x)", ""),
        ("int16_t id16(int16_t x)", ""), ("uint16_t idu16(uint16_t x)", ""),
        ("int32_t add32(int32_t a, int32_t b)", ""), ("uint32_t idu32(uint32_t x)", ""),
        ("int64_t id64(int64_t x)", ""), ("uint64_t inc64(uint64_t x)", ""), ("uint64_t idu64(uint64_t x)", ""),
        ("bool not_(bool b)", "action = \"not\""), ("float half(float x)", ""), ("double mul(double a, double b)", ""),
        ("char idc(char c)", ""), ("signed char idsc(signed char c)", ""), ("unsigned char iduc(unsigned char c)", ""),
        ("short ids(short x)", ""), ("unsigned short idus(unsigned short x)", ""),
        ("int idi(int x)", ""), ("unsigned int idui(unsigned int x)", ""),
        ("long idl(long x)", ""), ("unsigned long idul(unsigned long x)", ""),
        ("long long idll(long long x)", ""), ("unsigned long long idull(unsigned long long x)", ""),
        ("size_t idz(size_t x)", ""), ("size_t length(const char *s)", "result = \"bytes\""),
        ("const char *greeting(void)", ""), ("const char *nothing(void)", ""), ("const char *echo(const char *s)", ""),
        ("void touch(void)", ""), ("int touched(void)", ""),
        ("double mixed(int8_t a, uint16_t b, int32_t c, int64_t d, float e, double f, bool g, uint8_t h, const char *s, uint64_t i)",
         "result = \"sum\""),
    ]

    static var manifest: String {
        var text = """
        name = "ffitest"
        version = "0.1.0"
        description = "integer widths and friends"
        library = "./libffitest.so"
        scheme = "ffi"

        """
        for (declaration, extra) in functions {
            text += "\n[[function]]\ndeclaration = \"\(declaration)\"\n"
            if !extra.isEmpty { text += extra + "\n" }
        }
        return text
    }

    private static let built = Lock<Result<String, TestFailure>?>(nil)

    /// The manifest's path, building the library on first use.
    static func manifestPath() throws -> String {
        try built.withLock { built in
            if let built { return try built.get() }
            let result: Result<String, TestFailure>
            do {
                let directory = try TemporaryDirectory("xcb-ffi-lib")
                keep(directory)
                _ = try CCompiler.sharedLibrary("libffitest.so", source: source, in: directory)
                result = .success(try directory.write("ffitest.xcallback.toml", manifest))
            } catch let error as TestFailure {
                result = .failure(error)
            } catch {
                result = .failure(TestFailure("\(error)"))
            }
            built = result
            return try result.get()
        }
    }

    private static let driver = Lock<Driver?>(nil)

    /// The manifest loaded once (libraries are never unloaded anyway).
    static func loaded() throws -> Driver {
        let path = try manifestPath()
        return try driver.withLock { driver in
            if let driver { return driver }
            let made = try Driver(path: path)
            driver = made
            return made
        }
    }

    /// Directories that must outlive every test (a loaded library's file),
    /// removed when the test process exits so runs leave nothing in /tmp.
    private static let kept = Lock<[TemporaryDirectory]>([])
    static func keep(_ directory: TemporaryDirectory) {
        kept.withLock { kept in
            if kept.isEmpty { atexit { TestLibrary.removeKept() } }
            kept.append(directory)
        }
    }

    private static func removeKept() {
        for directory in kept.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory.path) }
    }
}
