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
        if language == "c" {
            // The binary that made it is the one on PATH: the Makefile says `xcallback`, and stays portable.
            let makefile = try String(contentsOfFile: project + "/Makefile", encoding: .utf8)
            #expect(makefile.contains("\nXCALLBACK ?= xcallback\n"), "\(makefile)")
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

    #if Wasm  // built with the package's Wasm trait; without it, WasmTraitTests checks that `new` says how to get it
    @Test("WebAssembly: make (clang --target=wasm32, no C library), check, run", .requires(.wasmClang),
          .scaledTimeLimit(minutes: 5))
    func wasmProject() throws {
        try Self.makeAndDrive("wasm", build: ["make"], library: "NAME.wasm")
    }
    #endif

    /// The README's `xcallback new NAME` (section "A plug-in in two minutes").
    static func readmeProjectName() throws -> String {
        let readme = try String(contentsOfFile: checkout + "/README.md", encoding: .utf8)
        let line = try #require(readme.components(separatedBy: "\n").first { $0.hasPrefix("xcallback new ") })
        return String(line.dropFirst("xcallback new ".count).prefix { $0 != " " })
    }

    @Test("C from a checkout's binary, not on PATH: the Makefile calls that binary, so make and make check work; the README's project and the guide's example load side by side",
          .requires(.cc), .scaledTimeLimit(minutes: 3))
    func cProjectFromCheckout() throws {
        let scratch = try Scratch()
        let home = scratch.file("home")
        #expect(mkdir(home, 0o755) == 0)
        let environment = ["HOME": home, "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"]
        let binary = try #require(realpath(Products.xcallback, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        })
        let name = try Self.readmeProjectName()
        let made = try runIn(scratch.path, [Products.xcallback, "new", name, "--language", "c"], environment: environment)
        #expect(made.stdout.contains("next: cd \(name) && make && \(binary) check lib\(name).so"), "\(made.stdout)")
        let project = scratch.file(name)
        let makefile = try String(contentsOfFile: project + "/Makefile", encoding: .utf8)
        #expect(makefile.contains("\nXCALLBACK ?= \(binary)\n"), "\(makefile)")
        let readme = try String(contentsOfFile: project + "/README.md", encoding: .utf8)
        #expect(readme.contains("\(binary) check lib\(name).so"), "\(readme)")
        try runIn(project, ["make"], environment: environment)
        let check = try runIn(project, ["make", "check"], environment: environment)
        #expect(check.stdout.contains("\(name.replacingOccurrences(of: "_", with: "-"))://x-callback-url/hello"), "\(check.stdout)")
        // The guide's quick start builds Examples/c-plugin/hello.c: a
        // plug-in of another name, so both load from one folder.
        let plugins = scratch.file("plugins")
        #expect(mkdir(plugins, 0o755) == 0)
        chmod(plugins, 0o755)
        try runIn(project, ["/bin/cp", "lib\(name).so", plugins + "/lib\(name).so"], environment: environment)
        let include = try runIn(scratch.path, [Products.xcallback, "sdk", "--include-dir"], environment: environment)
        try runIn(scratch.path, ["/usr/bin/cc", "-std=c11", "-shared", "-fPIC", "-I" + include.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
                                 Self.checkout + "/Examples/c-plugin/hello.c", "-o", plugins + "/hello.so"], environment: environment)
        let listing = try xcallback(["plugins", "--plugins", plugins])
        #expect(listing.status == .exited(0), "\(listing.stderr)")
        #expect(listing.lines.count == 2 && listing.lines.allSatisfy { $0.hasPrefix("loaded ") }, "\(listing.stdout)")
    }

    @Test("Swift and Rust from a checkout's binary, not on PATH: the README and the next step call that binary, the kit is the checkout's")
    func otherLanguagesFromCheckout() throws {
        let scratch = try Scratch()
        let environment = ["HOME": scratch.path, "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"]
        let binary = try #require(realpath(Products.xcallback, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        })
        for (language, manifest, library) in [("swift", "Package.swift", ".build/debug/libp_swift.so"),
                                              ("rust", "Cargo.toml", "target/debug/libp_rust.so")] {
            let name = "p_\(language)"
            let made = try runIn(scratch.path, [Products.xcallback, "new", name, "--language", language], environment: environment)
            #expect(made.stdout.contains("&& \(binary) check \(library)"), "\(made.stdout)")
            let readme = try String(contentsOfFile: scratch.file(name) + "/README.md", encoding: .utf8)
            #expect(readme.contains("\(binary) check \(library)"), "\(readme)")
            let text = try String(contentsOfFile: scratch.file(name) + "/" + manifest, encoding: .utf8)
            #expect(text.contains("path = \"\(Self.checkout)/bindings/rust/xcallback\"") || text.contains(".package(path: \"\(Self.checkout)/bindings/swift\")"),
                    "\(manifest):\n\(text)")
        }
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
