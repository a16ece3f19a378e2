import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The working cargo (tests that call it carry `.requires(.cargo)`).
func requireCargo(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    try Requirement.cargo.require(sourceLocation: sourceLocation)
    return try #require(Requirement.cargoPath, sourceLocation: sourceLocation)
}

/// `Examples/rust-plugin`, built as an author builds it: copied out of the
/// tree, its dependency pointed at this checkout's binding, `cargo build
/// --offline` (the binding has no dependencies), and the library installed
/// by copying with mode 0755 (plug-in guide, chapter 12).
enum RustExample {
    static let checkout = SwiftPluginPackageTests.checkout

    /// Builds the example in `scratch`; returns the plug-in folder holding `libgreeter.so`.
    static func build(in scratch: Scratch, cargo: String) throws -> String {
        let package = scratch.file("rust-plugin")
        try FileManager.default.createDirectory(atPath: package + "/src", withIntermediateDirectories: true)
        for file in ["Cargo.toml", "src/lib.rs", "requests.txt"] {
            try FileManager.default.copyItem(atPath: checkout + "/Examples/rust-plugin/" + file, toPath: package + "/" + file)
        }
        let manifest = package + "/Cargo.toml"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        let pointed = text.replacingOccurrences(of: #"path = "../../bindings/rust/xcallback""#,
                                                with: "path = \"\(checkout)/bindings/rust/xcallback\"")
        #expect(pointed != text, "the example no longer depends on the binding by path")
        try pointed.write(toFile: manifest, atomically: true, encoding: .utf8)
        // Its own target folder: never the checkout's (a developer's build may be there).
        try runIn(package, [cargo, "build", "--offline", "--target-dir", package + "/target"])
        let plugins = scratch.file("rust-plugins")
        #expect(mkdir(plugins, 0o755) == 0)
        #expect(copyfile(package + "/target/debug/libgreeter.so", to: plugins + "/libgreeter.so"))
        return plugins
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: checkout + "/" + path, encoding: .utf8).split(separator: "\n").map(String.init)
    }
}

/// `bindings/rust/xcallback` and `Examples/rust-plugin`, driven in both
/// isolation modes.
@Suite("Rust plug-in", .ownThreads)
struct RustPluginTests {
    @Test("Examples/rust-plugin builds with the in-repo binding and answers in both isolation modes",
          .requires(.cargo), .scaledTimeLimit(minutes: 10))
    func example() throws {
        let scratch = try Scratch()
        let plugins = try RustExample.build(in: scratch, cargo: try requireCargo())
        let requests = try RustExample.lines("Examples/rust-plugin/requests.txt")
        for isolation in ["none", "process"] {
            let result = try xcallback(["run", "-k", "--isolation", isolation, "--plugins", plugins], lines: requests)
            #expect(result.status == .exited(0), "\(isolation): \(result.stderr)")
            // The records Swift's example gives too (see the parity test), then the guide's extras.
            #expect(result.lines.suffix(5) == [
                // A typed argument.
                "success?greeting=Hello%2C%20guest%207%21",
                // An error in a domain the plug-in named.
                "error?errorCode=NoSuchGuest&errorMessage=guests%20are%20numbered%20from%201&errorDomain=guests",
                // guests/:number declined "Ada"; guests/* answered, to the x-success callback.
                "demo://greeted?greeting=Hello%2C%20Ada%21",
                // Answered from another thread, through a Responder.
                "demo://later?greeting=Hello%2C%20Ada%21",
                // A panic: an error outcome, the host and the worker unharmed.
                "error?errorCode=Panic&errorMessage=the%20handler%20panicked%3A%20asked%20to&errorDomain=greeter",
            ], "\(isolation): \(result.stderr)")
            #expect(result.lines.prefix(3) == [
                "success?greeting=Hello%2C%20Ada%21",
                "success?greeting=Hello%2C%20Grace%21",
                "error?errorCode=EmptyName&errorMessage=the%20name%20is%20empty&errorDomain=greeter",
            ], "\(isolation)")
        }
        let check = try xcallback(["check", plugins + "/libgreeter.so"])
        #expect(check.status == .exited(0), "\(check.stderr)")
        #expect(check.lines.contains("greeter://guests/:number"), "\(check.stdout)")
    }

    /// The binding's own unit tests (a fake host table), so `swift test`, the
    /// one test command, runs them too; given `xcallback sdk --layout`, they
    /// hold `xcallback::sys` to the header field for field.
    @Test("bindings/rust/xcallback: cargo test, sys held to sdk --layout",
          .requires(.cargo), .scaledTimeLimit(minutes: 10))
    func bindingUnitTests() throws {
        let scratch = try Scratch()
        let layout = try xcallback(["sdk", "--layout"])
        try #require(layout.status == .exited(0), "\(layout.stderr)")
        try layout.stdout.write(toFile: scratch.file("layout.txt"), atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["XCALLBACK_LAYOUT"] = scratch.file("layout.txt")
        try runIn(RustExample.checkout + "/bindings/rust/xcallback",
                  [try requireCargo(), "test", "--offline", "--target-dir", scratch.file("target")], environment: environment)
    }

    /// The guide's Rust chapter shows code from the example, which the test
    /// above builds and runs: every `rust` and `toml` block in the chapter
    /// must be a verbatim excerpt of `src/lib.rs` or `Cargo.toml`.
    @Test("the plug-in guide's Rust code blocks are excerpts of Examples/rust-plugin")
    func guideExcerpts() throws {
        let guide = try String(contentsOfFile: RustExample.checkout + "/docs/plugin-guide.md", encoding: .utf8)
        let chapter = try #require(guide.components(separatedBy: "\n## ").first { $0.hasPrefix("15. ") },
                                   "the guide has no chapter 15")
        let sources = try ["src/lib.rs", "Cargo.toml"].map {
            try String(contentsOfFile: RustExample.checkout + "/Examples/rust-plugin/" + $0, encoding: .utf8)
        }
        var blocks: [String] = []
        var current: [String]?
        for line in chapter.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```rust" || line == "```toml" {
                current = []
            } else if line == "```", let lines = current {
                blocks.append(lines.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        #expect(blocks.count >= 4, "the Rust chapter shows too little code")
        for block in blocks {
            #expect(sources.contains { $0.contains(block) }, "not in Examples/rust-plugin (src/lib.rs or Cargo.toml):\n\(block)")
        }
    }
}
