import Foundation
import Testing

/// A Swift plug-in built from a package of its own, outside this
/// repository, as an author builds one (plug-in guide, "Writing a plug-in in
/// Swift"): `Examples/swift-plugin` is copied to a temporary folder, its
/// dependency pointed at this checkout's kit (`bindings/swift`), built with `swift build`, and driven
/// by the host in both isolation modes.
@Suite("Swift plug-in from its own package", .ownThreads, .serialized)
struct SwiftPluginPackageTests {
    /// The checkout this test was built from.
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Builds the example outside the tree; returns the folder holding the library.
    static func buildExample(in scratch: Scratch) throws -> String {
        let package = scratch.file("swift-plugin")
        try FileManager.default.copyItem(atPath: checkout + "/Examples/swift-plugin", toPath: package)
        try? FileManager.default.removeItem(atPath: package + "/.build")
        let manifest = package + "/Package.swift"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        let pointed = text.replacingOccurrences(of: #"path: "../../bindings/swift""#, with: "path: \"\(checkout)/bindings/swift\"")
        #expect(pointed != text, "the example's manifest no longer depends on the checkout by path")
        try pointed.write(toFile: manifest, atomically: true, encoding: .utf8)
        let build = try ChildProcess(["swift", "build", "--package-path", package, "--scratch-path", package + "/.build"],
                                     executable: "/usr/bin/env")
        let status = build.waitForExit(timeout: TestTiming.scaled(900))
        try #require(status == .exited(0), "swift build failed: \(build.stdout.suffix(3000)) \(build.stderr.suffix(3000))")
        // The kit depends on nothing: no package was fetched, so none was pinned.
        #expect(access(package + "/Package.resolved", F_OK) != 0, "the plug-in's package resolved packages beyond the kit")
        let plugins = scratch.file("plugins")
        #expect(mkdir(plugins, 0o755) == 0)
        #expect(copyfile(package + "/.build/debug/libGreeter.so", to: plugins + "/libGreeter.so"))
        return plugins
    }

    @Test("Examples/swift-plugin builds outside the tree and loads in both isolation modes",
          .scaledTimeLimit(minutes: 15))
    func exampleOutsideTheTree() throws {
        let scratch = try Scratch()
        let plugins = try Self.buildExample(in: scratch)
        let requests = try String(contentsOfFile: Self.checkout + "/Examples/swift-plugin/requests.txt", encoding: .utf8)
            .split(separator: "\n").map(String.init)
        for isolation in ["none", "process"] {
            let result = try xcallback(["run", "-k", "--isolation", isolation, "--plugins", plugins], lines: requests)
            #expect(result.status == .exited(0), "\(isolation): \(result.stderr)")
            #expect(result.lines == [
                "success?greeting=Hello%2C%20Ada%21",
                "success?greeting=Hello%2C%20Grace%21",
                // A thrown error that is not a PluginError: the type's name, the plug-in's domain.
                "error?errorCode=EmptyName&errorMessage=the%20name%20is%20empty&errorDomain=greeter",
                "success?route=greeter%3A%2F%2Fx-callback-url%2Fwhoami&numbered=yes&attempt=1",
                // A typed enumeration, and the callbacks the request named.
                "demo://greeted?greeting=Hi%2C%20Ada%21",
                "demo://failed?errorCode=ParameterError&errorMessage=missing%20required%20parameter%20%27name%27&errorDomain=greeter",
                "demo://failed?errorCode=ParameterError&errorMessage=parameter%20%27greeting%27%20must%20be%20one%20of%20hello%2C%20hi%2C%20welcome%2C%20got%20%27yo%27&errorDomain=greeter",
            ], "\(isolation)")
        }
        let check = try xcallback(["check", plugins + "/libGreeter.so"])
        #expect(check.status == .exited(0), "\(check.stderr)")
        #expect(check.lines.first?.hasPrefix("greeter 1.0.0") == true, "\(check.stdout)")
    }
}
