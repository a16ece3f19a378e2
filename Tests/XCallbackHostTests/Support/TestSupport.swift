import CXCallback
import Dispatch
import Foundation
import Logging
import Testing
@testable import XCallbackBridge
import XCallbackRouting
@testable import XCallbackSystem
import XCallbackURL

@testable import XCallbackHost

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - Where things are

/// Paths of the repository and of the build products the tests use.
enum Paths {
    /// The repository root, found from this file's path
    /// (Tests/XCallbackHostTests/Support/TestSupport.swift).
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// `bindings/swift/Sources/CXCallback/include`, where `xcallback.h` lives.
    static let include = repository + "/bindings/swift/Sources/CXCallback/include"

    /// The directory of the running test executable: SwiftPM puts the
    /// sample plug-ins and the `xcallback` executable next to it.
    static let products: String = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        return (executable as NSString).deletingLastPathComponent
    }()

    /// `lib<Name>.so` in the products directory.
    static func sample(_ name: String) -> String { products + "/lib\(name).so" }

    /// The built command-line tool, used by `PluginProbe` as its child.
    static let xcallback = products + "/xcallback"
}

// MARK: - Temporary directories

/// A private temporary directory (mode 0700), removed when the value is
/// released. Plug-in files copied or compiled into it get mode 0755.
final class TemporaryDirectory: Sendable {
    let path: String

    init(_ label: String = "xcb-host-tests") throws {
        var template = Array((NSTemporaryDirectory() + "/\(label).XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp: \(String(cString: strerror(errno)))") }
        path = URL(fileURLWithPath: String(cString: made)).standardizedFileURL.path
        chmod(path, 0o700)
    }

    deinit {
        // Files may have been made read-only or re-owned by a test; root removes them anyway.
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `path/name`.
    func file(_ name: String) -> String { path + "/" + name }

    /// Creates (and returns) the subdirectory `name` with `mode`.
    @discardableResult
    func directory(_ name: String, mode: mode_t = 0o755) throws -> String {
        let target = file(name)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        chmod(target, mode)
        return target
    }

    /// Writes `text` to `name` and returns the path.
    @discardableResult
    func write(_ name: String, _ text: String, mode: mode_t = 0o644) throws -> String {
        let target = file(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: target))
        chmod(target, mode)
        return target
    }

    /// Copies `source` to `name` (mode 0755) and returns the new path.
    @discardableResult
    func copy(_ source: String, to name: String) throws -> String {
        let target = file(name)
        try FileManager.default.copyItem(atPath: source, toPath: target)
        chmod(target, 0o755)
        return target
    }
}

/// Directories that must outlive every test (they hold libraries loaded
/// once per process) and are removed when the process exits.
enum ProcessLifetimeDirectories {
    private static let kept = Lock<[TemporaryDirectory]>([])
    private static let registered = Lock(false)

    static func keep(_ directory: TemporaryDirectory) {
        kept.withLock { $0.append(directory) }
        registered.withLock { done in
            guard !done else { return }
            done = true
            atexit { ProcessLifetimeDirectories.removeAll() }
        }
    }

    private static func removeAll() {
        // A loaded library stays mapped after its file is gone.
        let directories = kept.withLock { kept in defer { kept.removeAll() }; return kept }
        for directory in directories { try? FileManager.default.removeItem(atPath: directory.path) }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Building C plug-ins

enum CCompiler {
    /// Runs `cc` with `arguments` in `directory`; throws with the compiler's
    /// output when it fails, returns its (warning) output when it succeeds.
    @discardableResult
    static func run(_ arguments: [String], in directory: String) throws -> String {
        let result = try Subprocess.run("cc", arguments, in: directory)
        guard result.status == 0 else {
            throw TestFailure("cc \(arguments.joined(separator: " ")) failed (\(result.status)):\n\(result.output)")
        }
        return result.output
    }

    /// Compiles `source` into the shared library `dir/name.so` with the
    /// plain command of xcallback.h (`cc -shared -fPIC -I include`) and
    /// gives it mode 0755. Returns the library's path.
    @discardableResult
    static func plugin(_ name: String, source: String, in directory: TemporaryDirectory,
                       into subdirectory: String? = nil, extraFlags: [String] = []) throws -> String {
        let sourcePath = try directory.write("\(name).c", source)
        let outputDirectory = subdirectory ?? directory.path
        let output = outputDirectory + "/\(name).so"
        try run(["-shared", "-fPIC", "-I", Paths.include] + extraFlags + [sourcePath, "-o", output], in: directory.path)
        chmod(output, 0o755)
        return output
    }
}

// MARK: - C sources of small test plug-ins

enum CSource {
    /// A plug-in whose descriptor is filled field by field (C expressions),
    /// with one route `scheme://x-callback-url/ping` answering `pong=1`.
    static func descriptor(
        magic: String = "XCALLBACK_ABI_MAGIC", major: String = "XCALLBACK_ABI_MAJOR",
        minor: String = "XCALLBACK_ABI_MINOR", size: String = "(uint32_t)sizeof(xcallback_descriptor)",
        apiSize: String = "(uint32_t)sizeof(xcallback_host_api)", name: String = "\"descriptor-test\"", scheme: String = "desc",
        registerStatus: String = "rc"
    ) -> String {
        """
        #include "xcallback.h"

        XCALLBACK_EXPORT const xcallback_descriptor *xcallback_plugin_descriptor(void)
        {
            static const xcallback_descriptor descriptor = {
                \(magic), \(major), \(minor), \(size), \(apiSize), \(name), "1.0.0", "built by the tests"
            };
            return &descriptor;
        }

        static const xcallback_host_api *host;

        static void ping(const xcallback_request *request, xcallback_reply reply, void *user_data)
        {
            (void)request, (void)user_data;
            const xcallback_param output[] = { { "pong", "1" } };
            host->reply_success(reply, output, 1);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
        {
            host = api;
            int rc = api->register_action(plugin, "\(scheme)", "ping", ping, NULL);
            (void)rc;
            return \(registerStatus);
        }
        """
    }

    /// A plug-in named `name` registering `patterns` (full pattern routes)
    /// with a handler answering `plugin=<name>`. It records every
    /// registration status; `<symbol>(i)` returns status `i` (or 99).
    /// Returns `registerStatus` (a C expression; `first_failure` is the
    /// first non-OK status, 0 when none).
    static func routes(name: String, patterns: [String], registerStatus: String = "first_failure",
                       statusSymbol: String = "route_status") -> String {
        let registrations = patterns.map {
            "    record(api->register_pattern(plugin, \"\($0)\", answer, NULL));"
        }.joined(separator: "\n")
        return """
        #include "xcallback.h"

        XCALLBACK_PLUGIN("\(name)", "1.0.0", "routes for the tests")

        static const xcallback_host_api *host;
        static int statuses[32];
        static int status_count;
        static int first_failure;

        static void record(int status)
        {
            if (status_count < 32)
                statuses[status_count++] = status;
            if (status != XCALLBACK_OK && first_failure == 0)
                first_failure = status;
        }

        XCALLBACK_EXPORT int \(statusSymbol)(int index)
        {
            return index >= 0 && index < status_count ? statuses[index] : 99;
        }

        static void answer(const xcallback_request *request, xcallback_reply reply, void *user_data)
        {
            (void)request, (void)user_data;
            const xcallback_param output[] = { { "plugin", "\(name)" } };
            host->reply_success(reply, output, 1);
        }

        XCALLBACK_EXPORT int xcallback_plugin_register(const xcallback_host_api *api, xcallback_plugin *plugin)
        {
            host = api;
            status_count = 0;
            first_failure = 0;
        \(registrations)
            return \(registerStatus);
        }
        """
    }
}

// MARK: - Exported test hooks of compiled plug-ins

/// Looks up `symbol` in the library at `path`, which must already be
/// loaded (RTLD_NOLOAD: this never loads anything new).
func loadedSymbol<T>(_ symbol: String, in path: String, as type: T.Type) throws -> T {
    guard let library = dlopen(path, RTLD_NOW | RTLD_NOLOAD) else {
        throw TestFailure("\(path) is not loaded: \(dlerror().map { String(cString: $0) } ?? "?")")
    }
    guard let address = dlsym(library, symbol) else { throw TestFailure("\(path) has no symbol \(symbol)") }
    return unsafeBitCast(address, to: type)
}

typealias CIntFunction = @convention(c) () -> Int32
typealias CIntOfIntFunction = @convention(c) (Int32) -> Int32

// MARK: - Logging

/// Log lines captured by `Logger.capturing`.
final class LogCapture: Sendable {
    private let storage = Lock<[String]>([])

    var lines: [String] { storage.withLock { $0 } }

    func append(_ line: String) { storage.withLock { $0.append(line) } }

    func contains(_ text: String) -> Bool { lines.contains { $0.contains(text) } }
}

struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let plugin = all["plugin"].map { "\($0)" } ?? "-"
        capture.append("\(event.level) [\(plugin)] \(event.message)")
    }
}

extension Logger {
    /// A logger whose lines go to `capture` (never to stderr, and never
    /// through the process-wide LoggingSystem, which tests must not bootstrap).
    static func capturing(_ capture: LogCapture = LogCapture()) -> Logger {
        Logger(label: "xcallback.tests") { _ in CapturingLogHandler(capture: capture) }
    }
}

// MARK: - Calling handlers through the real ABI

/// Records every result a `HandlerCall` delivers, and on which thread.
final class Recorder: Sendable {
    private let storage = Lock<[(result: HandlerResult, thread: pthread_t)]>([])
    private let signal = DispatchSemaphore(value: 0)

    var results: [HandlerResult] { storage.withLock { $0.map(\.result) } }
    var threads: [pthread_t] { storage.withLock { $0.map(\.thread) } }

    func record(_ result: HandlerResult) {
        storage.withLock { $0.append((result, pthread_self())) }
        signal.signal()
    }

    /// A fresh `HandlerCall` delivering here.
    func makeCall() -> HandlerCall {
        HandlerCall { [self] in record($0) }
    }

    /// Waits until `count` results have arrived or `timeout` seconds have
    /// passed; true when they all arrived.
    func wait(for count: Int = 1, timeout: Double = 5) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while storage.withLock({ $0.count }) < count {
            if signal.wait(timeout: deadline) == .timedOut {
                return storage.withLock { $0.count } >= count
            }
        }
        return true
    }
}

/// What a handler answered, for assertions.
struct Answer: CustomStringConvertible {
    let result: HandlerResult

    var outcome: Outcome? {
        if case .outcome(let outcome) = result { return outcome }
        return nil
    }

    var kind: OutcomeKind? { outcome?.kind }
    func value(_ name: String) -> String? { outcome?.value(name) }
    var errorCode: String? { value("errorCode") }
    var errorDomain: String? { value("errorDomain") }
    var errorMessage: String? { value("errorMessage") }
    var isDeclined: Bool { result == .declined }

    var description: String {
        switch result {
        case .declined: return "declined"
        case .outcome(let outcome): return outcome.line(callback: nil)
        }
    }
}

/// A loaded plug-in with its own route table (the one the dispatcher
/// would build), so a test can call it with a URL the way the host does.
struct PluginUnderTest: Sendable {
    let plugin: LoadedPlugin
    let endpoint: InProcessEndpoint
    let table: RouteTable<Int>

    init(_ plugin: LoadedPlugin) {
        self.plugin = plugin
        self.endpoint = InProcessEndpoint(plugin: plugin)
        var table = RouteTable<Int>()
        for (index, pattern) in plugin.routes.enumerated() { table.insert(pattern, value: index) }
        self.table = table
    }

    var routeTexts: [String] { plugin.routes.map(\.text) }

    /// The fields the dispatcher would hand the handler for `line`, and the
    /// index of the best route.
    func prepare(_ line: String) throws -> (handler: Int, fields: RequestFields) {
        let url = try RequestURL(parsing: line)
        guard let match = table.firstMatch(scheme: url.scheme, host: url.host, path: url.pathSegments) else {
            throw TestFailure("no route of \(plugin.name) matches \(line)")
        }
        let fields = RequestFields(
            url: line, scheme: url.scheme, source: url.source, parameters: Array(url.parameters),
            arguments: match.arguments.map { QueryParameter(name: $0.name, value: $0.value) })
        return (match.value, fields)
    }

    /// Starts `line` through `InProcessEndpoint.invoke` and returns the
    /// recorder (and the call, to abandon it) without waiting. `parameters`,
    /// when given, replace the action parameters parsed from `line` (for
    /// values the URL parser will not produce, such as NUL bytes).
    func start(_ line: String, parameters: [QueryParameter]? = nil) throws -> (recorder: Recorder, call: HandlerCall) {
        var (handler, fields) = try prepare(line)
        if let parameters { fields.parameters = parameters }
        let recorder = Recorder()
        let call = recorder.makeCall()
        endpoint.invoke(handler: handler, request: fields, call: call)
        return (recorder, call)
    }

    /// Calls `line` and waits (bounded) for its one result.
    func call(_ line: String, parameters: [QueryParameter]? = nil, timeout: Double = 5) throws -> Answer {
        let (recorder, _) = try start(line, parameters: parameters)
        guard recorder.wait(for: 1, timeout: timeout) else {
            throw TestFailure("\(line): no result within \(timeout) s")
        }
        let results = recorder.results
        guard results.count == 1 else { throw TestFailure("\(line): \(results.count) results: \(results)") }
        return Answer(result: results[0])
    }
}

/// Loads each library once per test process: a plug-in's registration
/// runs once, as in a host, and every test shares the result.
enum LoadedPlugins {
    private static let cache = Lock<[String: PluginUnderTest]>([:])
    static let log = LogCapture()

    static func load(_ path: String) throws -> PluginUnderTest {
        // Loading under the lock keeps two tests from registering the same library at once.
        try cache.withLock { cache in
            if let loaded = cache[path] { return loaded }
            let loaded = PluginUnderTest(try PluginLoader(logger: .capturing(log)).load(path))
            cache[path] = loaded
            return loaded
        }
    }

    static func sample(_ name: String) throws -> PluginUnderTest {
        try load(Paths.sample(name))
    }
}

// MARK: - Hosts

/// A host over `directories` whose log is captured; its deadline timer is
/// stopped when the test is done with it.
func makeHost(_ directories: [String], allowInsecure: Bool = false,
              log: LogCapture = LogCapture()) -> XCallbackHost.Host {
    var configuration = HostConfiguration(pluginDirectories: directories)
    configuration.isolation = .none
    configuration.allowInsecurePlugins = allowInsecure
    return XCallbackHost.Host(configuration: configuration, logger: .capturing(log))
}

extension XCallbackHost.Host {
    /// The status of the plug-in file at `path`.
    func status(of path: String) -> PluginStatus? {
        plugins.first { $0.path == path }
    }
}

/// Where a system library lives (mapped, then found in /proc/self/maps),
/// so a test can name the file itself: a bare name is a file in the
/// current directory to the loader, not a library to search for.
enum SystemLibrary {
    static func path(of library: String, symbol: String) -> String? {
        guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL), dlsym(handle, symbol) != nil,
              let maps = FileHandle(forReadingAtPath: "/proc/self/maps") else { return nil }
        defer { try? maps.close() }
        let text = String(decoding: maps.readDataToEndOfFile(), as: UTF8.self)
        for line in text.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if path.hasSuffix("/" + library) { return path }
        }
        return nil
    }
}

extension Trait where Self == TimeLimitTrait {
    /// `.timeLimit(.minutes(minutes))` stretched by `XCALLBACK_TEST_TIME_SCALE`
    /// (which `.ci/sanitize` sets): a limit here is a hang detector, and must
    /// not fire because a sanitizer build on a busy machine is slow.
    static func scaledTimeLimit(minutes: Int) -> Self {
        let scale = ProcessInfo.processInfo.environment["XCALLBACK_TEST_TIME_SCALE"].flatMap(Double.init) ?? 1
        return .timeLimit(.minutes(Int((Double(minutes) * max(scale, 1)).rounded(.up))))
    }
}

/// Runs `lines` through a real in-process Host with one C plug-in built
/// from `source`, and returns the records it wrote.
func serveThroughHost(plugin name: String, source: String, lines: [String],
                      configure: (inout HostConfiguration) -> Void = { _ in }) throws -> [String] {
    let directory = try TemporaryDirectory()
    let plugins = try directory.directory("plugins")
    try CCompiler.plugin(name, source: source, in: directory, into: plugins)
    var configuration = HostConfiguration(pluginDirectories: [plugins])
    configuration.isolation = .none
    configure(&configuration)
    let host = Host(configuration: configuration, logger: Logger(label: "test"))
    try host.loadPlugins(requireDirectories: true)
    let input = try directory.write("input.txt", lines.joined(separator: "\n") + "\n")
    let inputDescriptor = open(input, O_RDONLY)
    let outputPath = directory.file("output.txt")
    let outputDescriptor = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    try #require(inputDescriptor >= 0 && outputDescriptor >= 0)
    host.serve(input: inputDescriptor, output: outputDescriptor)
    close(inputDescriptor)
    close(outputDescriptor)
    return try String(contentsOfFile: outputPath, encoding: .utf8).split(separator: "\n").map(String.init)
}
