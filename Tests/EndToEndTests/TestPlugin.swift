import Foundation
import Testing

/// Small C plug-ins the end-to-end tests build for themselves with `cc`
/// (the plain command of the plug-in guide), never installed as samples.
enum TestPlugin {
    /// The folder holding xcallback.h.
    static let include: String = {
        var path = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { path.deleteLastPathComponent() }
        return path.appendingPathComponent("bindings/swift/Sources/CXCallback/include").path
    }()

    /// Compiles `source` into `directory/lib<name>.so` (mode 0755).
    @discardableResult
    static func build(_ name: String, source: String, into directory: String) throws -> String {
        let sourcePath = directory + "/\(name).c"
        try Data(source.utf8).write(to: URL(fileURLWithPath: sourcePath))
        let library = directory + "/lib\(name).so"
        let compiler = try ChildProcess(["cc", "-shared", "-fPIC", "-Wall", "-I", include, sourcePath, "-o", library],
                                        executable: "/usr/bin/env")
        guard compiler.waitForExit(timeout: 60) == .exited(0) else {
            throw HarnessError("cc failed for \(name): \(compiler.stderr)")
        }
        try? FileManager.default.removeItem(atPath: sourcePath)
        chmod(library, 0o755)
        return library
    }
}
