import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `xcallback sdk --kit` from a binary copied anywhere: the Swift kit's
/// package and the Rust crate it carries are written to the user's data
/// folder, byte for byte what `bindings/` holds, and nothing but that.
@Suite("sdk --kit", .ownThreads)
struct SDKKitTests {
    /// Every file under the checkout's `bindings/` that is source (not a
    /// build's output or a lock file), by its path there.
    static func checkoutKit() throws -> [String: Data] {
        let root = TestPostgres.repository + "/bindings"
        var files: [String: Data] = [:]
        let skipped: Set<String> = [".build", "target", ".gitignore", "Cargo.lock", "Package.resolved", ".swiftpm"]
        guard let walker = FileManager.default.enumerator(atPath: root) else { throw HarnessError("cannot list \(root)") }
        while let path = walker.nextObject() as? String {
            if skipped.contains((path as NSString).lastPathComponent) {
                walker.skipDescendants()
                continue
            }
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            files[path] = FileManager.default.contents(atPath: root + "/" + path)
        }
        return files
    }

    @Test("the kits a copied binary writes are bindings/ exactly; a stale file is rewritten")
    func carriedKitIsTheCheckouts() async throws {
        let scratch = try Scratch()
        let bin = scratch.file("bin"), home = scratch.file("home")
        #expect(mkdir(bin, 0o755) == 0 && mkdir(home, 0o755) == 0)
        let copy = try ChildProcess([Products.xcallback, bin + "/xcallback"], executable: "/bin/cp")
        #expect(await copy.awaitExit() == .exited(0))
        let environment = ["HOME": home, "PATH": "/usr/bin:/bin"]
        let first = try ChildProcess(["sdk", "--kit"], executable: bin + "/xcallback", environment: environment)
        #expect(await first.awaitExit() == .exited(0), "stderr: \(first.stderr)")
        let folder = home + "/.local/share/xcallback/bindings"
        #expect(first.stdout == folder + "\n")

        let expected = try Self.checkoutKit()
        #expect(expected.keys.contains("swift/Package.swift") && expected.keys.contains("rust/xcallback/Cargo.toml"))
        var written: [String: Data] = [:]
        let walker = FileManager.default.enumerator(atPath: folder)
        while let path = walker?.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + path, isDirectory: &isFolder), !isFolder.boolValue {
                written[path] = FileManager.default.contents(atPath: folder + "/" + path)
            }
        }
        let missing = expected.keys.filter { written[$0] == nil }.sorted()
        #expect(missing.isEmpty, "bindings/ files the binary does not carry (add them to Sources/CSDKHeader/sdk_kit.c): \(missing)")
        let extra = written.keys.filter { expected[$0] == nil }.sorted()
        #expect(extra.isEmpty, "the binary carries files bindings/ no longer has: \(extra)")
        let differing = expected.keys.filter { written[$0] != nil && written[$0] != expected[$0] }.sorted()
        #expect(differing.isEmpty, "carried files that differ from bindings/: \(differing)")

        // A stale file (an older binary's) is rewritten on the next call.
        try "// old\n".write(toFile: folder + "/swift/Package.swift", atomically: true, encoding: .utf8)
        let again = try ChildProcess(["sdk", "--kit"], executable: bin + "/xcallback", environment: environment)
        #expect(await again.awaitExit() == .exited(0))
        #expect(FileManager.default.contents(atPath: folder + "/swift/Package.swift") == expected["swift/Package.swift"])
    }

    @Test("sdk --kit from a build in the checkout names the checkout's bindings/",
          .enabled(if: Products.directory.hasPrefix(TestPostgres.repository + "/"),
                   "built outside the checkout (--scratch-path): the binary finds no checkout, by design"))
    func checkoutBuild() async throws {
        let result = try ChildProcess(["sdk", "--kit"])
        #expect(await result.awaitExit() == .exited(0))
        #expect(result.stdout == TestPostgres.repository + "/bindings\n")
    }
}
