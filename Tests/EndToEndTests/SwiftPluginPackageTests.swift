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
        // One route of Foundation's (dates through ICU and time-zone data,
        // JSON), which a worker must be able to load in its default
        // sandbox's file view: what a Swift plug-in author reaches for first.
        let source = package + "/Sources/Greeter/Greeter.swift"
        let greeter = try String(contentsOfFile: source, encoding: .utf8)
        let withFoundation = "import Foundation\n" + greeter.replacingOccurrences(of: """
                routes.action("greeter", "whoami") { request in
            """, with: """
                routes.action("greeter", "stamp") { request in
                    let date = try ISO8601DateFormatter().date(from: request.parameter("at", as: String.self)) ?? Date(timeIntervalSince1970: 0)
                    let formatter = DateFormatter()
                    formatter.locale = Locale(identifier: "en_US_POSIX")
                    formatter.timeZone = TimeZone(identifier: "Europe/Paris")
                    formatter.dateFormat = "EEEE HH:mm zzz"
                    let json = try JSONSerialization.data(withJSONObject: ["day": Calendar(identifier: .gregorian).component(.day, from: date)])
                    return .success(["paris": formatter.string(from: date), "json": String(decoding: json, as: UTF8.self)])
                }
                routes.action("greeter", "whoami") { request in
            """)
        #expect(withFoundation != "import Foundation\n" + greeter, "the example's whoami route moved")
        try withFoundation.write(toFile: source, atomically: true, encoding: .utf8)
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
        // Foundation in a worker's default sandbox: ICU's data, the zone
        // database and JSON, all inside its file view.
        let stamp = try xcallback(["run", "--isolation", "process", "--plugins", plugins],
                                  lines: ["greeter://x-callback-url/stamp?at=2026-11-28T07:00:00Z"])
        #expect(stamp.lines == ["success?json=%7B%22day%22%3A28%7D&paris=Saturday%2008%3A00%20GMT%2B1"]
                || stamp.lines == ["success?paris=Saturday%2008%3A00%20GMT%2B1&json=%7B%22day%22%3A28%7D"],
                "\(stamp.stdout) \(stamp.stderr)")
        let check = try xcallback(["check", plugins + "/libGreeter.so"])
        #expect(check.status == .exited(0), "\(check.stderr)")
        #expect(check.lines.first?.hasPrefix("greeter 1.0.0") == true, "\(check.stdout)")
    }
}
