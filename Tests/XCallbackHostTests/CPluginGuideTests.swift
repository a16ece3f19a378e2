import CXCallback
import Foundation
import Testing
@testable import XCallbackSystem
import XCallbackURL

@testable import XCallbackHost

/// docs/plugin-guide.md and Examples/c-plugin/hello.c: the example builds
/// with exactly the documented command and answers as documented.
@Suite("C plug-in author guide", .ownThreads)
struct CPluginGuideTests {
    /// Builds hello.c once, as section 1 of the guide does: copy the example
    /// directory, then `cc -std=c11 -Wall -shared -fPIC -I<include> hello.c -o hello.so`.
    enum Hello {
        private static let built = Lock<Result<(path: String, output: String), TestFailure>?>(nil)

        static func build() throws -> (path: String, output: String) {
            try built.withLock { built in
                if let built { return try built.get() }
                let result: Result<(path: String, output: String), TestFailure>
                do {
                    let directory = try TemporaryDirectory("xcb-hello")
                    ProcessLifetimeDirectories.keep(directory)
                    try directory.copy(Paths.repository + "/Examples/c-plugin/hello.c", to: "hello.c")
                    // The guide's command, with the in-repo include directory
                    // standing for "$(xcallback sdk --include-dir)".
                    let output = try CCompiler.run(
                        ["-std=c11", "-Wall", "-shared", "-fPIC", "-I\(Paths.include)", "hello.c", "-o", "hello.so"],
                        in: directory.path)
                    chmod(directory.file("hello.so"), 0o755)
                    result = .success((directory.file("hello.so"), output))
                } catch let error as TestFailure {
                    result = .failure(error)
                } catch {
                    result = .failure(TestFailure("\(error)"))
                }
                built = result
                return try result.get()
            }
        }

        static func load() throws -> PluginUnderTest {
            try LoadedPlugins.load(build().path)
        }
    }

    @Test func helloBuildsWithTheDocumentedCommandWithoutWarnings() throws {
        let (_, output) = try Hello.build()
        #expect(output.isEmpty, "cc printed:\n\(output)")
    }

    @Test func helloBuildsWithTheRecommendedExtras() throws {
        // Section 11: -Wextra -Wmissing-prototypes, -O2, -fvisibility=hidden, -Wl,-z,defs (and the in-repo -I form).
        let directory = try TemporaryDirectory()
        try directory.copy(Paths.repository + "/Examples/c-plugin/hello.c", to: "hello.c")
        let output = try CCompiler.run(
            ["-std=c11", "-Wall", "-Wextra", "-Wmissing-prototypes", "-O2", "-fvisibility=hidden", "-Wl,-z,defs",
             "-shared", "-fPIC", "-I", Paths.include, "hello.c", "-o", "hello.so"],
            in: directory.path)
        #expect(output.isEmpty, "cc printed:\n\(output)")
        // Only the entry points are exported.
        let symbols = try Subprocess.run("nm", ["-D", "--defined-only", "hello.so"], in: directory.path)
        let exported = symbols.output.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
            .filter { $0.hasPrefix("xcallback_") }
        #expect(exported.sorted() == ["xcallback_plugin_descriptor", "xcallback_plugin_register", "xcallback_plugin_shutdown"])
    }

    @Test func helloLoadsWithItsDescriptorAndRoutes() throws {
        let hello = try Hello.load()
        let info = hello.plugin.info
        #expect(info.name == "hello")
        #expect(info.version == "1.0.0")
        #expect(info.summary == "Greets people: hello://x-callback-url/greet?name=")
        #expect(info.abiMajor == 1 && info.abiMinor == Int(XCALLBACK_ABI_MINOR))
        #expect(hello.routeTexts == ["hello://x-callback-url/greet", "hello://people/:name"])
        #expect(LoadedPlugins.log.contains("debug [hello] hello is ready"))
    }

    @Test(arguments: [
        ("hello://x-callback-url/greet?name=Ada", "Hello, Ada!"),
        ("hello://people/Bob", "Hello, Bob!"),
        ("hello://x-callback-url/greet?name=Zo%C3%AB%20Q", "Hello, Zoë Q!"),
        ("hello://x-callback-url/greet?name=", "Hello, !"),
    ])
    func helloGreets(line: String, greeting: String) throws {
        let answer = try Hello.load().call(line)
        #expect(answer.outcome == .success([QueryParameter(name: "greeting", value: greeting)]), "\(answer)")
    }

    @Test func helloGreetingOnTheWireIsAsDocumented() throws {
        // Section 1: success?greeting=Hello%2C%20Ada%21
        let answer = try Hello.load().call("hello://x-callback-url/greet?name=Ada")
        #expect(answer.outcome?.line(callback: nil) == "success?greeting=Hello%2C%20Ada%21")
    }

    @Test func helloWithoutANameIsAParameterErrorInDomainHello() throws {
        let answer = try Hello.load().call("hello://x-callback-url/greet")
        #expect(answer.outcome == .error(code: "ParameterError", message: "missing required parameter 'name'", domain: "hello"))
        // Section 13's record.
        #expect(answer.outcome?.line(callback: nil)
            == "error?errorCode=ParameterError&errorMessage=missing%20required%20parameter%20%27name%27&errorDomain=hello")
    }

    @Test func helloNeedsNoNulCheck() throws {
        // The guide's rule: a %00 never reaches a plug-in (the host answers
        // InvalidURL), so hello.c has no check of its own.
        let source = try String(contentsOfFile: Paths.repository + "/Examples/c-plugin/hello.c", encoding: .utf8)
        #expect(!source.contains("memchr"))
        #expect(throws: (any Error).self) { _ = try RequestURL(parsing: "hello://x-callback-url/greet?name=a%00b") }
    }

    @Test func theQuickStartPingPluginWorks() throws {
        // Section 1's smallest plug-in, verbatim, plus the descriptor macro line.
        let directory = try TemporaryDirectory()
        let path = try CCompiler.plugin("ping", source: """
            #include "xcallback.h"

            XCALLBACK_PLUGIN("ping", "1.0.0", "Answers ping://x-callback-url/ping")

            static const xcallback_host_api *host;

            static void ping(const xcallback_request *request, xcallback_reply reply, void *user_data)
            {
                (void)request, (void)user_data;
                const xcallback_param output[] = { { "answer", "pong" } };
                host->reply_success(reply, output, 1);
            }

            XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api,
                                                           xcallback_plugin *plugin)
            {
                host = api;
                return api->register_action(plugin, "ping", "ping", ping, NULL);
            }
            """, in: directory, extraFlags: ["-std=c11", "-Wall"])
        let ping = try LoadedPlugins.load(path)
        #expect(try ping.call("ping://x-callback-url/ping").outcome == .success([QueryParameter(name: "answer", value: "pong")]))
    }
}
