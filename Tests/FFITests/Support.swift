import Foundation
import Logging
import Testing
@testable import XCallbackBridge
import XCallbackRouting
@testable import XCallbackSystem
import XCallbackURL

@testable import XCallbackHost

/// Paths inside the repository, from this file's location.
enum Repository {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()
    static let include = root + "/bindings/swift/Sources/CXCallback/include"
    static let mathManifest = root + "/Plugins/Math/math.xcallback.toml"
    static let typedExample = root + "/Examples/c-plugin/typed.c"
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A private temporary directory (mode 0700, as plug-in directories must
/// be), removed when the value goes away.
final class TemporaryDirectory: @unchecked Sendable {
    let path: String

    init(_ prefix: String = "xcb-ffi") throws {
        var template = Array("\(NSTemporaryDirectory())/\(prefix).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let target = file(name)
        try text.write(toFile: target, atomically: false, encoding: .utf8)
        chmod(target, 0o644)
        return target
    }
}

/// Runs the system C compiler.
enum CCompiler {
    /// Compiles `source` into the shared library `name` in `directory`.
    static func sharedLibrary(_ name: String, source: String, in directory: TemporaryDirectory,
                              extraArguments: [String] = []) throws -> String {
        let sourcePath = try directory.write(name + ".c", source)
        let output = directory.file(name)
        let result = try Subprocess.run("cc", ["-std=c11", "-Wall", "-Werror", "-shared", "-fPIC", "-I", Repository.include]
            + extraArguments + [sourcePath, "-o", output], in: directory.path)
        guard result.status == 0 else { throw TestFailure("cc failed for \(name):\n\(result.output)") }
        chmod(output, 0o755)
        return output
    }
}

/// A quiet logger: refusals are asserted on, not printed.
let quietLogger: Logger = {
    var logger = Logger(label: "xcallback.ffi-tests")
    logger.logLevel = .critical
    return logger
}()

/// Loads a plug-in file (a `.so` or a manifest) through the host's loader.
func load(_ path: String) throws(PluginLoadError) -> LoadedPlugin {
    try PluginLoader(logger: quietLogger).load(path)
}

/// The load error for `path`, which must fail to load.
func loadError(_ path: String) throws -> PluginLoadError {
    do {
        let plugin = try load(path)
        throw TestFailure("\(path) loaded with routes \(plugin.routes.map(\.text)), expected a load error")
    } catch let error as PluginLoadError {
        return error
    }
}

/// Collects the one result of a handler call; waits for it with a bound.
final class ResultBox: Sendable {
    private let results = Lock<[HandlerResult]>([])

    func put(_ result: HandlerResult) { results.withLock { $0.append(result) } }

    var all: [HandlerResult] { results.withLock { $0 } }

    func wait(seconds: Double = 5) throws -> HandlerResult {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let first = results.withLock({ $0.first }) { return first }
            usleep(1000)
        }
        throw TestFailure("no result within \(seconds) s")
    }
}

/// A loaded plug-in driven the way the dispatcher drives it: match the
/// URL against its routes, then `InProcessEndpoint.invoke` with a
/// `HandlerCall` that collects the result.
struct Driver: Sendable {
    let plugin: LoadedPlugin
    let endpoint: InProcessEndpoint
    let table: RouteTable<Int>

    init(_ plugin: LoadedPlugin) {
        self.plugin = plugin
        endpoint = InProcessEndpoint(plugin: plugin)
        var table = RouteTable<Int>()
        for (index, pattern) in plugin.routes.enumerated() { table.insert(pattern, value: index) }
        self.table = table
    }

    init(path: String) throws {
        self.init(try load(path))
    }

    /// The request for `line` and the handler index its route leads to;
    /// nil when no route matches.
    func route(_ line: String) throws -> (handler: Int, fields: RequestFields)? {
        let url = try RequestURL(parsing: line)
        guard let match = table.firstMatch(scheme: url.scheme, host: url.host, path: url.pathSegments) else {
            return nil
        }
        let fields = RequestFields(url: line, scheme: url.scheme, source: url.source,
                                   parameters: Array(url.parameters),
                                   arguments: match.arguments.map { QueryParameter(name: $0.name, value: $0.value) })
        return (match.value, fields)
    }

    /// The outcome of `line`; nil when no route matches (NotFoundAction).
    func outcome(_ line: String) throws -> Outcome? {
        guard let (handler, fields) = try route(line) else { return nil }
        return try invoke(handler, fields)
    }

    func invoke(_ handler: Int, _ fields: RequestFields) throws -> Outcome {
        let box = ResultBox()
        endpoint.invoke(handler: handler, request: fields, call: HandlerCall { box.put($0) })
        switch try box.wait() {
        case .outcome(let outcome):
            #expect(box.all.count == 1, "completed \(box.all.count) times")
            return outcome
        case .declined:
            throw TestFailure("declined")
        }
    }

    /// The `result` of a successful `line`, or a failure describing the outcome.
    func result(_ line: String, named name: String = "result") throws -> String? {
        guard let outcome = try outcome(line) else { throw TestFailure("no route for \(line)") }
        guard outcome.kind == .success else {
            throw TestFailure("\(line): \(outcome.kind) \(outcome.parameters)")
        }
        return outcome.value(name)
    }

    /// The error outcome of `line` as (code, message, domain).
    func error(_ line: String) throws -> (code: String, message: String, domain: String) {
        guard let outcome = try outcome(line) else { throw TestFailure("no route for \(line)") }
        guard outcome.kind == .error else {
            throw TestFailure("\(line): expected an error, got \(outcome.kind) \(outcome.parameters)")
        }
        return (outcome.value("errorCode") ?? "", outcome.value("errorMessage") ?? "", outcome.value("errorDomain") ?? "")
    }
}
