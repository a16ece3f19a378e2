import Foundation
import Testing

/// docs/plugin-guide.md: typed function actions from a binding manifest (the Math
/// sample binds libm through libffi), in both isolation modes.
@Suite("Binding manifests end to end", .ownThreads)
struct ManifestTests {
    /// Plugins/Math in this repository.
    static let mathDirectory: String = {
        var path = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { path.deleteLastPathComponent() }  // Tests/EndToEndTests/ManifestTests.swift → root
        return path.appendingPathComponent("Plugins/Math").path
    }()

    @Test("math pow, cbrt and an undeclared symbol", arguments: ["process", "none"])
    func mathThroughTheHost(isolation: String) throws {
        let result = try xcallback(
            ["run", "-k", "--plugins", Self.mathDirectory, "--isolation", isolation, "--output", "jsonl"],
            lines: [
                "math://x-callback-url/pow?x=2&y=10",
                "math://x-callback-url/cbrt?x=27",
                "math://x-callback-url/pow?x=2",
                "math://x-callback-url/pow?x=two&y=1",
                "math://x-callback-url/system?command=id",
            ])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let records = try result.records()
        try #require(records.count == 5)
        #expect(records[0].params["result"] == "1024")
        #expect(records[1].params["result"] == "3")
        #expect(records[2].errorCode == "ParameterError")
        #expect(records[2].params["errorMessage"]?.contains("'y'") == true, "\(records[2])")
        #expect(records[3].errorCode == "ParameterError")
        #expect(records[3].errorDomain == "xcallback")
        // Only declared functions are reachable: a URL never names a symbol.
        #expect(records[4].errorCode == "NotFoundAction")
    }

    @Test("routes and check show bound functions with their signatures")
    func listingsShowSignatures() throws {
        let routes = try xcallback(["routes", "--plugins", Self.mathDirectory])
        #expect(routes.status == .exited(0))
        #expect(routes.lines.contains("math://x-callback-url/pow → math  double pow(double x, double y)"), "\(routes.stdout)")
        let check = try xcallback(["check", Self.mathDirectory + "/math.xcallback.toml"])
        #expect(check.status == .exited(0), "stderr: \(check.stderr)")
        #expect(check.stdout.contains("double cbrt(double x)"), "\(check.stdout)")
    }
}
