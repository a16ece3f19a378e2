import CXCallback
import Foundation
import Testing
@testable import XCallbackBridge
@testable import XCallbackSystem
import XCallbackURL

@testable import XCallbackHost

/// `register_function` (plug-in ABI 1.1): C plug-ins registering plain C
/// functions with their declarations, including the documented example.
@Suite("Registered typed functions", .ownThreads)
struct RegisteredFunctionTests {
    /// A plug-in exercising register_function's statuses; `status_at(i)`
    /// returns the i-th registration status, `late()` registers after
    /// registration has ended.
    static let source = #"""
    #include <stdbool.h>
    #include <stdint.h>
    #include "xcallback.h"

    XCALLBACK_PLUGIN("regfn", "2.0.0", "register_function statuses")

    static const xcallback_host_api *host;
    static xcallback_plugin *self;
    static int statuses[16];
    static int count;

    static double mul(double a, double b) { return a * b; }
    static int8_t neg8(int8_t x) { return (int8_t)-x; }
    static uint64_t twice(uint64_t x) { return x * 2; }
    static void nothing(void) {}

    static void record(int status) { if (count < 16) statuses[count++] = status; }

    XCALLBACK_EXPORT int status_at(int index) { return index >= 0 && index < count ? statuses[index] : 99; }

    XCALLBACK_EXPORT int late(void)
    {
        return host->register_function(self, "regfn://x-callback-url/late", "void nothing(void)",
                                       (void (*)(void))nothing, NULL);
    }

    XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
    {
        host = api;
        self = plugin;
        if (api->abi_minor < 1)
            return -100;
        /* 0: a pattern with arguments feeding parameters of the same names */
        record(api->register_function(plugin, "regfn://mul/:a/:b", "double mul(double a, double b)",
                                      (void (*)(void))mul, "product"));
        /* 1: a plain action */
        record(api->register_function(plugin, "regfn://x-callback-url/neg8", "int8_t neg8(int8_t x)",
                                      (void (*)(void))neg8, NULL));
        /* 2: a bad declaration (no parameter name) */
        record(api->register_function(plugin, "regfn://x-callback-url/bad", "double mul(double, double b)",
                                      (void (*)(void))mul, NULL));
        /* 3: an unsupported type */
        record(api->register_function(plugin, "regfn://x-callback-url/ptr", "int f(int *p)",
                                      (void (*)(void))mul, NULL));
        /* 4: a bad pattern */
        record(api->register_function(plugin, "regfn://x-callback-url/(", "uint64_t twice(uint64_t x)",
                                      (void (*)(void))twice, NULL));
        /* 5-7: NULL arguments and an empty result name */
        record(api->register_function(plugin, "regfn://x-callback-url/n", NULL, (void (*)(void))twice, NULL));
        record(api->register_function(plugin, "regfn://x-callback-url/n", "uint64_t twice(uint64_t x)", NULL, NULL));
        record(api->register_function(plugin, "regfn://x-callback-url/n", "uint64_t twice(uint64_t x)",
                                      (void (*)(void))twice, ""));
        /* 8: a handler-less route next to native ones is fine */
        record(api->register_function(plugin, "regfn://x-callback-url/twice", "uint64_t twice(uint64_t x)",
                                      (void (*)(void))twice, "doubled"));
        return XCALLBACK_OK;
    }
    """#

    private static let built = Lock<Result<String, TestFailure>?>(nil)

    static func pluginPath() throws -> String {
        try built.withLock { built in
            if let built { return try built.get() }
            let result: Result<String, TestFailure>
            do {
                let directory = try TemporaryDirectory("xcb-regfn")
                TestLibrary.keep(directory)
                result = .success(try CCompiler.sharedLibrary("regfn.so", source: source, in: directory))
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

    static func loaded() throws -> Driver {
        let path = try pluginPath()
        return try driver.withLock { driver in
            if let driver { return driver }
            let made = try Driver(path: path)
            driver = made
            return made
        }
    }

    private typealias IntFunction = @convention(c) (Int32) -> Int32
    private typealias VoidIntFunction = @convention(c) () -> Int32

    private func symbol<T>(_ name: String, as type: T.Type) throws -> T {
        let handle = try #require(dlopen(try Self.pluginPath(), RTLD_NOW | RTLD_NOLOAD))
        let address = try #require(dlsym(handle, name), "no symbol \(name)")
        return unsafeBitCast(address, to: type)
    }

    @Test func statusesOfEveryRegistration() throws {
        let driver = try Self.loaded()
        #expect(driver.plugin.info.abiMinor == Int(XCALLBACK_ABI_MINOR))
        let statusAt = try symbol("status_at", as: IntFunction.self)
        let statuses = (0..<9).map { statusAt(Int32($0)) }
        #expect(statuses == [
            Int32(XCALLBACK_OK), Int32(XCALLBACK_OK),
            Int32(XCALLBACK_ERR_BAD_DECLARATION), Int32(XCALLBACK_ERR_BAD_DECLARATION),
            Int32(XCALLBACK_ERR_BAD_PATTERN),
            Int32(XCALLBACK_ERR_INVALID_ARGUMENT), Int32(XCALLBACK_ERR_INVALID_ARGUMENT), Int32(XCALLBACK_ERR_INVALID_ARGUMENT),
            Int32(XCALLBACK_OK),
        ])
        #expect(XCALLBACK_ERR_BAD_DECLARATION == -6)
        #expect(driver.plugin.routes.map(\.text) == ["regfn://mul/:a/:b", "regfn://x-callback-url/neg8", "regfn://x-callback-url/twice"])
        #expect(driver.plugin.signatures.map { $0?.description } == [
            "double mul(double a, double b)", "int8_t neg8(int8_t x)", "uint64_t twice(uint64_t x)",
        ])
    }

    @Test func registrationAfterRegisterIsRefused() throws {
        _ = try Self.loaded()
        let late = try symbol("late", as: VoidIntFunction.self)
        #expect(late() == Int32(XCALLBACK_ERR_NOT_REGISTERING))
    }

    @Test func routeArgumentsFeedParametersFirst() throws {
        let driver = try Self.loaded()
        #expect(try driver.result("regfn://mul/3/4", named: "product") == "12")
        // The route argument wins over a query parameter of the same name.
        #expect(try driver.result("regfn://mul/3/4?a=100", named: "product") == "12")
        let error = try driver.error("regfn://mul/three/4")
        #expect(error.message == "parameter 'a' must be a double (a decimal number), got 'three'")
    }

    @Test func integerWidthsAndResultNames() throws {
        let driver = try Self.loaded()
        #expect(try driver.result("regfn://x-callback-url/neg8?x=-127") == "127")
        #expect(try driver.error("regfn://x-callback-url/neg8?x=128").code == "ParameterError")
        #expect(try driver.result("regfn://x-callback-url/twice?x=9223372036854775807", named: "doubled") == "18446744073709551614")
        #expect(try driver.outcome("regfn://x-callback-url/bad?b=1") == nil)
    }

    /// The C view of a bound route (an `xcallback_handler` plus user data)
    /// completes its reply token like any native handler.
    @Test func cViewOfABoundRouteCompletesAReplyToken() throws {
        let driver = try Self.loaded()
        let (index, fields) = try #require(try driver.route("regfn://x-callback-url/neg8?x=5"))
        let handler = driver.plugin.registrations[index].handler
        #expect(handler.boundFunction != nil)
        let native = NativeRequest(fields, route: "test://route")
        let box = ResultBox()
        let reply = HostAPI.replies.open(request: native, plugin: "regfn") { box.put($0) }
        handler.function(native.opaque, reply, handler.userData)
        #expect(try box.wait() == .outcome(.success([QueryParameter(name: "result", value: "-5")])))
        #expect(HostAPI.replies.plugin(of: reply) == nil)   // completed and retired
    }

    // MARK: the documented example

    @Test func typedExampleBuildsAndAnswersAsDocumented() throws {
        let directory = try TemporaryDirectory()
        let source = try String(contentsOfFile: Repository.typedExample, encoding: .utf8)
        let path = try CCompiler.sharedLibrary("typed.so", source: source, in: directory,
                                               extraArguments: ["-Wextra", "-Wpedantic"])
        let typed = try Driver(path: path)
        #expect(typed.plugin.info.name == "typed")
        #expect(try typed.result("typed://x-callback-url/add?lhs=2&rhs=4.2") == "6.2")
        #expect(try typed.result("typed://x-callback-url/clamp?value=300&low=0&high=255", named: "clamped") == "255")
        let missing = try typed.error("typed://x-callback-url/add?lhs=2")
        #expect(missing.code == "ParameterError" && missing.domain == "xcallback")
        #expect(missing.message == "missing required parameter 'rhs': a double (a decimal number)")
        let wide = try typed.error("typed://x-callback-url/clamp?value=1e3&low=0&high=1")
        #expect(wide.message.hasPrefix("parameter 'value' must be an int32_t"))
    }

    /// A plug-in built against ABI 1.0 (descriptor minor 0, no use of
    /// register_function) still loads into this 1.1 host.
    @Test func minorZeroPluginsStillLoad() throws {
        let directory = try TemporaryDirectory()
        let path = try CCompiler.sharedLibrary("old.so", source: #"""
            #include "xcallback.h"
            XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void)
            {
                static const xcallback_descriptor descriptor = {
                    XCALLBACK_ABI_MAGIC, 1, 0, (uint32_t)sizeof(xcallback_descriptor), 0u, "old", "1.0.0", NULL };
                return &descriptor;
            }
            static void ping(const xcallback_request *request, xcallback_reply reply, void *user_data);
            static const xcallback_host_api *host;
            static void ping(const xcallback_request *request, xcallback_reply reply, void *user_data)
            {
                (void)request, (void)user_data;
                host->reply_success(reply, NULL, 0);
            }
            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
            {
                host = api;
                return api->register_action(plugin, "old", "ping", ping, NULL);
            }
            """#, in: directory)
        let old = try Driver(path: path)
        #expect(old.plugin.info.abiMinor == 0)
        #expect(try old.outcome("old://x-callback-url/ping") == .success())
    }
}
