import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs `command` in `directory`; fails the test with its output unless it exits 0.
@discardableResult
func runIn(_ directory: String, _ command: [String], environment: [String: String]? = nil, timeout: Double = 900,
           sourceLocation: SourceLocation = #_sourceLocation) throws -> ChildProcess {
    let shell = "cd '\(directory)' && exec " + command.map { "'\($0)'" }.joined(separator: " ")
    let child = try ChildProcess(["/bin/sh", "-c", shell], executable: "/usr/bin/env", environment: environment)
    let status = child.waitForExit(timeout: TestTiming.scaled(timeout))
    try #require(status == .exited(0), "\(command.joined(separator: " ")): \(child.stdout.suffix(2000)) \(child.stderr.suffix(3000))",
                 sourceLocation: sourceLocation)
    return child
}

/// `xcallback new` (docs/plugin-guide.md, chapter 15): from a copy of the
/// binary in an empty HOME, each language's project builds offline with its
/// usual one command, and its library passes `check` and answers its sample
/// requests in both isolation modes.
@Suite("xcallback new", .ownThreads, .serialized)
struct NewPluginProjectTests {
    static let checkout = SwiftPluginPackageTests.checkout

    /// Makes the project as an author with only the binary would: a copy of
    /// `xcallback` on PATH, an empty HOME, no checkout to find, no network
    /// needed. Builds it with `build`, then checks the library at `library`
    /// and runs its sample requests in both isolation modes.
    static func makeAndDrive(_ language: String, build: [String], library: String) throws {
        let scratch = try Scratch()
        let bin = scratch.file("bin"), home = scratch.file("home")
        #expect(mkdir(bin, 0o755) == 0 && mkdir(home, 0o755) == 0)
        // Copied by cp: a descriptor of ours writing it would be inherited by
        // another test's child, and running the copy would fail (ETXTBSY).
        try runIn(scratch.path, ["/bin/cp", Products.xcallback, bin + "/xcallback"])
        let copy = bin + "/xcallback"
        let real = ProcessInfo.processInfo.environment
        let swiftFolder = (real["PATH"] ?? "").split(separator: ":").first { access($0 + "/swift", X_OK) == 0 }.map(String.init)
        var environment = ["HOME": home, "LANG": "C.UTF-8",
                           "PATH": ([bin] + (swiftFolder.map { [$0] } ?? []) + ["/usr/local/bin", "/usr/bin", "/bin"]).joined(separator: ":")]
        // cargo's toolchains stay where they are installed.
        environment["RUSTUP_HOME"] = real["RUSTUP_HOME"] ?? NSHomeDirectory() + "/.rustup"
        environment["CARGO_HOME"] = real["CARGO_HOME"] ?? NSHomeDirectory() + "/.cargo"
        let name = "hello_\(language)"
        let started = Date()
        try runIn(scratch.path, [copy, "new", name, "--language", language], environment: environment)
        let project = scratch.file(name)
        for manifest in ["Package.swift", "Cargo.toml"] {
            guard let text = try? String(contentsOfFile: project + "/" + manifest, encoding: .utf8) else { continue }
            #expect(!text.contains("://"), "\(manifest) names a URL:\n\(text)")
        }
        try runIn(project, build, environment: environment)
        if language == "swift" {
            #expect(access(project + "/Package.resolved", F_OK) != 0, "the plug-in's package resolved packages beyond the kit")
        }
        let path = project + "/" + library.replacingOccurrences(of: "NAME", with: name)
        let check = try ChildProcess(["check", path], executable: copy, environment: environment)
        #expect(check.waitForExit(timeout: 30) == .exited(0), "\(check.stderr)")
        #expect(ChildProcess.lines(check.stdout).contains("hello-\(language)://x-callback-url/hello"), "\(check.stdout)")
        let requests = try String(contentsOfFile: project + "/requests.txt", encoding: .utf8)
        let plugins = String(path[..<path.lastIndex(of: "/")!])
        for isolation in ["none", "process"] {
            let run = try ChildProcess(["run", "-k", "--isolation", isolation, "--plugins", plugins], executable: copy,
                                       stdin: .bytes(Array(requests.utf8)), environment: environment)
            #expect(run.waitForExit(timeout: 30) == .exited(0), "\(isolation): \(run.stderr)")
            #expect(ChildProcess.lines(run.stdout) == [
                "success?greeting=Hello%2C%20Ada%21",
                // One rule in every language: the plug-in's own domain, the same words.
                "error?errorCode=ParameterError&errorMessage=missing%20required%20parameter%20%27name%27&errorDomain=\(name)",
            ], "\(isolation): \(run.stderr)")
        }
        print("new \(language): from `new` to both isolation modes' answers in \(Int(Date().timeIntervalSince(started) * 1000)) ms")
    }

    @Test("C: make, check, run", .scaledTimeLimit(minutes: 5))
    func cProject() throws {
        try Self.makeAndDrive("c", build: ["make"], library: "libNAME.so")
    }

    @Test("Swift: swift build, check, run", .scaledTimeLimit(minutes: 15))
    func swiftProject() throws {
        try Self.makeAndDrive("swift", build: ["swift", "build"], library: ".build/debug/libNAME.so")
    }

    @Test("Rust: cargo build, check, run", .requires(.cargo),
          .scaledTimeLimit(minutes: 10))
    func rustProject() throws {
        try Self.makeAndDrive("rust", build: [try requireCargo(), "build", "--offline"], library: "target/debug/libNAME.so")
    }

    @Test("an existing folder or a name that cannot be a scheme is refused")
    func refusals() throws {
        let scratch = try Scratch()
        #expect(mkdir(scratch.file("taken"), 0o755) == 0)
        let taken = try ChildProcess(["/bin/sh", "-c", "cd '\(scratch.path)' && exec '\(Products.xcallback)' new taken"],
                                     executable: "/usr/bin/env")
        #expect(taken.waitForExit(timeout: 10) != .exited(0))
        #expect(taken.stderr.contains("taken already exists"), "\(taken.stderr)")
        let bad = try xcallback(["new", "Bad-Name"])
        #expect(bad.status != .exited(0))
        #expect(bad.stderr.contains("is not a plug-in name"), "\(bad.stderr)")
    }
}
