import Foundation
import Testing
@testable import XCallbackBridge
@testable import XCallbackSystem
import XCallbackURL

@testable import XCallbackHost

/// Binding manifests: the Math sample, a libc binding, discovery, the
/// no-arbitrary-symbol rule, and every way a manifest can be refused at
/// load time (each with a message naming the file and the problem).
@Suite("Binding manifests", .ownThreads)
struct BindingManifestTests {
    // MARK: the Math sample

    @Test func mathManifestLoadsAsAPlugin() throws {
        let plugin = try load(Repository.mathManifest)
        #expect(plugin.info.name == "math")
        #expect(plugin.info.version == "1.0.0")
        #expect(plugin.info.summary == "libm functions as x-callback-url actions")
        #expect(plugin.info.abiMajor == 1 && plugin.info.abiMinor == 2)   // the host's ABI (1.2)
        let routes = plugin.routes.map(\.text)
        for action in ["pow", "cbrt", "sqrt", "hypot", "floor", "ceil", "fabs", "fmax"] {
            #expect(routes.contains("math://x-callback-url/\(action)"), "\(routes)")
        }
        let pow = try #require(plugin.routes.firstIndex { $0.text == "math://x-callback-url/pow" })
        #expect(plugin.signatures[pow]?.description == "double pow(double x, double y)")
    }

    @Test func mathAnswersWithLibm() throws {
        let math = try Driver(path: Repository.mathManifest)
        #expect(try math.result("math://x-callback-url/pow?x=2&y=10") == "1024")
        #expect(try math.result("math://x-callback-url/pow?x=2&y=0.5") == "1.4142135623731")
        #expect(try math.result("math://x-callback-url/cbrt?x=8") == "2")
        // Whatever this libm says (glibc 2.36 answers 3.0000000000000004 for 27).
        // glibc's cbrt(27) is 3.0000000000000004; results keep 15 digits.
        #expect(try math.result("math://x-callback-url/cbrt?x=27") == "3")
        #expect(try math.result("math://x-callback-url/hypot?x=3&y=4") == "5")
        #expect(try math.result("math://x-callback-url/floor?x=-2.5") == "-3")
        #expect(try math.result("math://x-callback-url/fmax?x=-1&y=7.25") == "7.25")
        #expect(try math.result("math://x-callback-url/ln?x=1") == "0")
        #expect(try math.result("math://x-callback-url/sqrt?x=-1") == "nan")
        let missing = try math.error("math://x-callback-url/pow?x=2")
        #expect(missing.code == "ParameterError" && missing.domain == "xcallback")
        #expect(missing.message == "missing required parameter 'y': a double (a decimal number)")
    }

    // MARK: only declared functions

    @Test func noURLReachesAnUndeclaredSymbol() throws {
        let math = try Driver(path: Repository.mathManifest)
        // libm (and the libc it links) export these; none is declared.
        for action in ["system", "exp2", "log2", "dlopen", "pow/../system", "POW"] {
            #expect(try math.route("math://x-callback-url/\(action)?command=id&x=1") == nil, "\(action)")
        }
        #expect(try math.route("math://pow?x=1&y=2") == nil)              // not an x-callback-url action
        #expect(try math.route("math://x-callback-url/pow/extra?x=1&y=2") == nil)

        let ffi = try TestLibrary.loaded()
        // `secret` is in libffitest.so but in no [[function]].
        #expect(try ffi.route("ffi://x-callback-url/secret") == nil)
        // `not_` is bound under its action name only.
        #expect(try ffi.route("ffi://x-callback-url/not_?b=1") == nil)
        #expect(try ffi.result("ffi://x-callback-url/not?b=1") == "false")
    }

    @Test func libcStrlenThroughAManifest() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("libc.xcallback.toml", """
            name = "libc-strings"
            library = "libc.so.6"
            scheme = "str"
            [[function]]
            declaration = "size_t strlen(const char *s)"
            action = "length"
            result = "bytes"
            """)
        let strings = try Driver(path: path)
        #expect(strings.plugin.info.version == "")
        #expect(try strings.result("str://x-callback-url/length?s=x-callback-url", named: "bytes") == "14")
        #expect(try strings.outcome("str://x-callback-url/strlen?s=a") == nil)
        #expect(try strings.outcome("str://x-callback-url/system?command=id") == nil)
    }

    // MARK: discovery

    @Test func discoveryFindsManifestsBesideSharedLibraries() throws {
        let directory = try TemporaryDirectory()
        try directory.write("a.xcallback.toml", "")
        try directory.write("b.toml", "")
        try directory.write(".hidden.xcallback.toml", "")
        try directory.write("c.so", "")
        try directory.write("xcallback.toml.bak", "")
        let scan = PluginDiscovery(directories: [directory.path], security: FileSecurity()).scan()
        #expect(scan.candidates == [directory.file("a.xcallback.toml"), directory.file("c.so")])
        #expect(PluginDiscovery.suffixes.contains(".xcallback.toml"))
    }

    @Test func relativeLibraryPathsAreTakenFromTheManifestsDirectory() {
        #expect(PluginLoader.resolve("./libx.so", besides: "/p/q/x.xcallback.toml") == "/p/q/./libx.so")
        #expect(PluginLoader.resolve("lib/libx.so", besides: "/p/q/x.xcallback.toml") == "/p/q/lib/libx.so")
        #expect(PluginLoader.resolve("/usr/lib/libx.so", besides: "/p/q/x.xcallback.toml") == "/usr/lib/libx.so")
        #expect(PluginLoader.resolve("libm.so.6", besides: "/p/q/x.xcallback.toml") == "libm.so.6")
    }

    // MARK: refused at load time

    private static let valid = """
        name = "broken"
        library = "libm.so.6"
        scheme = "broken"
        [[function]]
        declaration = "double cbrt(double x)"
        """

    /// (manifest text, what the message must contain)
    @Test(arguments: [
        // missing or wrong keys
        ("name = \"m\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"",
         "missing required key 'library'"),
        ("library = \"libm.so.6\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"",
         "missing required key 'name'"),
        ("name = \"m\"\nlibrary = \"libm.so.6\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"",
         "missing required key 'scheme'"),
        ("name = \"m\"\nlibrary = \"libm.so.6\"\nscheme = \"m\"\n[[function]]\naction = \"cube\"",
         "function 1: missing required key 'declaration'"),
        ("name = \"m\"\nlibrary = \"libm.so.6\"\nscheme = \"m\"",
         "no functions: add at least one [[function]] table"),
        ("name = \"m\"\nlibrary = \"libm.so.6\"\nscheme = \"m\"\nfunction = \"pow\"",
         "'function' must be an array of tables ([[function]]), not string"),
        ("name = 3\nlibrary = \"libm.so.6\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"",
         "'name' must be a string, not an integer"),
        ("name = \"no spaces\"\nlibrary = \"libm.so.6\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"",
         "'name' is \"no spaces\"; use 1-64 characters"),
        ("fuction = 1\n" + valid, "unknown key 'fuction' (expected name, version, description, library, scheme, function)"),
        (valid + "\nsymbol = \"cbrt\"", "function 1: unknown key 'symbol' (expected declaration, action, result)"),
        (valid + "\n[[function]]\ndeclaration = \"double sqrt(double x)\"\naction = \"cbrt\"",
         "function 2: action 'cbrt' is already declared by function 1"),
        (valid + "\nresult = \"\"", "function 1: 'result' must be a non-empty parameter name"),
        (valid + "\naction = \"a/b\"", "function 1: cannot make a route of scheme \"broken\" and action \"a/b\""),
        // bad TOML
        ("name = \"m\"\nlibrary = ", "invalid TOML at line 2, column 11"),
        ("name = \"m\"\n[[function]\n", "invalid TOML at line 2"),
        // declarations refused at load time
        ("name = \"m\"\nlibrary = \"libm.so.6\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double frexp(double x, int *exp)\"",
         "function 1: declaration \"double frexp(double x, int *exp)\": line 1, column 24: pointer type 'int *' is not supported"),
        ("name = \"m\"\nlibrary = \"libm.so.6\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double)\"",
         "line 1, column 19: expected a name for the double parameter, found ')'"),
        ("name = \"m\"\nlibrary = \"libc.so.6\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"int printf(const char *format, ...)\"",
         "line 1, column 32: variadic functions ('...') are not supported"),
        // the library and its symbols
        ("name = \"m\"\nlibrary = \"libxcallback-no-such-library.so.9\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"",
         "cannot open library 'libxcallback-no-such-library.so.9': libxcallback-no-such-library.so.9: cannot open shared object file"),
        ("name = \"m\"\nlibrary = \"./missing.so\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"",
         "cannot open library './missing.so'"),
        ("name = \"m\"\nlibrary = \"libm.so.6\"\nscheme = \"m\"\n[[function]]\ndeclaration = \"double cbrt(double x)\"\n[[function]]\ndeclaration = \"double xcallback_nonexistent(double x)\"",
         "function 2 (double xcallback_nonexistent(double x)): library 'libm.so.6' has no symbol 'xcallback_nonexistent'"),
    ])
    func refusedAtLoadTime(text: String, expected: String) throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("broken.xcallback.toml", text)
        let error = try loadError(path)
        guard case .badManifest(let message) = error.reason else {
            Issue.record("\(error.reason)")
            return
        }
        #expect(message.contains(expected), "\(message)")
        #expect(error.description == "\(path): binding manifest: \(PrintableText.escaping(message))")
        #expect(!message.contains("\n"), "one line: \(message)")
    }

    @Test func unreadableAndNonUTF8Manifests() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.file("gone.xcallback.toml")
        #expect(try loadError(missing).reason == .cannotOpen("No such file or directory"))
        let binary = directory.file("binary.xcallback.toml")
        _ = FileManager.default.createFile(atPath: binary, contents: Data([0x6E, 0x3D, 0xFF, 0xFE]))
        #expect(try loadError(binary).reason == .badManifest("not valid UTF-8"))
    }

    @Test func aRouteAnotherPluginOwnsIsALoadError() throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("clash.xcallback.toml", Self.valid)
        do {
            _ = try PluginLoader(logger: quietLogger).load(path) { pattern in
                pattern.text == "broken://x-callback-url/cbrt" ? "owner" : nil
            }
            Issue.record("loaded despite the conflict")
        } catch {
            #expect(error.reason == .badManifest("route broken://x-callback-url/cbrt: plug-in 'owner' already owns a route of the same shape"))
        }
    }
}
