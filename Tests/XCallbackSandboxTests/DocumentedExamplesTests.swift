import Foundation
import Testing
import XCallbackSandbox

/// The capability files the docs show parse as shown: a
/// reader who copies one gets a working file.
@Suite("Documented capability files")
struct DocumentedExamplesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every ```toml block of `file` that is a capability file (not a
    /// binding manifest or a systemd unit).
    static func tomlBlocks(in file: String) throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```toml") {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks.filter { $0.contains("network") || $0.contains("memory") }
    }

    @Test("declarations and operator grants in the docs parse", arguments: ["docs/security.md", "docs/plugin-guide.md"])
    func documented(file: String) throws {
        let blocks = try Self.tomlBlocks(in: file)
        #expect(!blocks.isEmpty, "no capability example in \(file)")
        for block in blocks {
            if block.contains("[all]") || block.contains("[plugin.") {
                #expect(throws: Never.self) { _ = try SandboxPolicy(parsing: block, file: file) }
            } else {
                #expect(throws: Never.self) { _ = try CapabilityDeclaration.parse(block, file: file) }
            }
        }
    }
}
