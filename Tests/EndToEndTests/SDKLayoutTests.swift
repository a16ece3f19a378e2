import Foundation
import Testing

/// `xcallback sdk --layout` prints what a C compiler sees in xcallback.h:
/// checked field by field against offsetof and sizeof from `cc`.
@Suite("sdk --layout", .ownThreads)
struct SDKLayoutTests {
    @Test("every field's offset and size match the C compiler's, and every host API field is listed")
    func layoutMatchesTheCompiler() throws {
        let layout = try xcallback(["sdk", "--layout"])
        #expect(layout.status == .exited(0), "\(layout.stderr)")
        let lines = layout.lines.filter { !$0.hasPrefix("#") }
        #expect(layout.lines.first?.hasPrefix("# xcallback ABI 1.2") == true)
        var program = "#include <stddef.h>\n#include <stdio.h>\n#include \"xcallback.h\"\nint main(void) {\n"
        for line in lines {
            let words = line.split(separator: " ").map(String.init)
            if words.count == 3, words[1] == "size" {
                program += "    printf(\"%s size %zu\\n\", \"\(words[0])\", sizeof(\(words[0])));\n"
            } else if words.count == 5, words[1] == "offset" {
                let parts = words[0].split(separator: ".").map(String.init)
                program += "    printf(\"%s offset %zu size %zu\\n\", \"\(words[0])\", offsetof(\(parts[0]), \(parts[1])), sizeof(((\(parts[0]) *)0)->\(parts[1])));\n"
            }
        }
        program += "    return 0;\n}\n"
        let scratch = try Scratch()
        try program.write(toFile: scratch.file("layout.c"), atomically: true, encoding: .utf8)
        let compiler = try ChildProcess(["cc", "-std=c11", "-I", TestPlugin.include, scratch.file("layout.c"), "-o", scratch.file("layout")],
                                        executable: "/usr/bin/env")
        try #require(compiler.waitForExit(timeout: 60) == .exited(0), "\(compiler.stderr)")
        let run = try ChildProcess([], executable: scratch.file("layout"))
        #expect(run.waitForExit(timeout: 10) == .exited(0))
        #expect(run.stdoutLines.filter { !$0.isEmpty } == lines)
        // The last host API field is the last one listed: nothing was left out.
        let header = try String(contentsOfFile: TestPlugin.include + "/xcallback.h", encoding: .utf8)
        let declared = header.components(separatedBy: "(*").dropFirst().compactMap { $0.split(separator: ")").first.map(String.init) }
        let listed = Set(lines.compactMap { $0.split(separator: " ").first?.split(separator: ".").last.map(String.init) })
        // Typedefs name themselves xcallback_*; register_function's parameter is `function`.
        let missing = declared.filter { !listed.contains($0) && !$0.contains("xcallback") && $0 != "function" }
        #expect(missing.isEmpty, "host API fields sdk --layout leaves out: \(missing)")
    }
}
