import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every shell block of the README runs as written, in order, in one fresh
/// HOME, and the sample job prints what the README says it prints.
///
/// A block is a ```sh fence. A comment line just before it may say
/// `<!-- readme-test: postgres -->` (it needs the queue's test server: PGHOST
/// and PGUSER point at it, and a database `jobs` is made first) and/or
/// `stops after N lines` (it runs until stopped, as `outcomes --follow` does:
/// it passes once its stdout has N lines, and is then stopped with SIGTERM).
///
/// The blocks run in a folder that holds the checkout's `Examples`,
/// `Plugins`, `docs` and `contrib`, and `.build/debug` for the products this
/// test runs from. `swift` is a stand-in there: the package is already built
/// (`swift build` succeeds at once, `--show-bin-path` names the products), and
/// `swift test` is the command running this very test.
@Suite("README command blocks", .ownThreads, .scaledTimeLimit(minutes: 4))
struct ReadmeTests {
    struct Block: CustomStringConvertible {
        let line: Int
        let script: String
        let needsPostgres: Bool
        let stopsAfterLines: Int?
        var description: String { "README.md:\(line)" }
    }

    static func blocks(in readme: String) -> [Block] {
        ShellBlock.all(in: readme, directivePrefix: "<!-- readme-test:").map { block in
            var stops: Int?
            if let range = block.directive.range(of: "stops after ") {
                stops = Int(block.directive[range.upperBound...].prefix { $0.isNumber })
            }
            return Block(line: block.line, script: block.lines.joined(separator: "\n") + "\n",
                         needsPostgres: block.directive.contains("postgres"), stopsAfterLines: stops)
        }
    }

    /// The output sample that follows "## Try it": every line but "..." must appear.
    static func documentedSampleOutput(in readme: String) -> [String] {
        guard let tryIt = readme.range(of: "## Try it") else { return [] }
        var fence: String?  // the opening line of the fence we are in
        var sample: [String] = []
        for line in readme[tryIt.upperBound...].components(separatedBy: "\n") {
            if line.hasPrefix("```") {
                if fence == "```" { break }  // the end of the first plain block
                fence = fence == nil ? line : nil
                continue
            }
            if fence == "```" && line != "..." && !line.isEmpty { sample.append(line) }
        }
        return sample
    }

    @Test("every ```sh block of the README runs as written in a fresh HOME, in order")
    func everyBlockRuns() throws {
        let readme = try String(contentsOfFile: TestPostgres.repository + "/README.md", encoding: .utf8)
        let blocks = Self.blocks(in: readme)
        #expect(blocks.count >= 6, "the README's shell blocks were not found")
        let scratch = try Scratch()
        let work = scratch.file("work"), home = scratch.file("home"), runtime = scratch.file("runtime")
        let shims = scratch.file("shims")
        for folder in [work, home, shims, work + "/.build"] { mkdir(folder, 0o755) }
        mkdir(runtime, 0o700)
        for name in ["Examples", "Plugins", "docs", "contrib"] {
            symlink(TestPostgres.repository + "/" + name, work + "/" + name)
        }
        symlink(Products.directory, work + "/.build/debug")
        try installScript(at: shims + "/swift", """
            #!/bin/sh
            # Stands in for swift: the package is built (this test runs from it).
            case "$*" in
              *--show-bin-path*) echo '\(Products.directory)' ;;
              build*) exit 0 ;;
              test*) exit 0 ;;
              *) echo "swift stand-in: unexpected 'swift $*'" >&2; exit 1 ;;
            esac
            """)

        let environment = ["HOME": home, "XDG_RUNTIME_DIR": runtime, "LANG": "C.UTF-8",
                           "PATH": "\(shims):\(Products.directory):/usr/local/bin:/usr/bin:/bin"]
        for block in blocks {
            var blockEnvironment = environment
            if block.needsPostgres {
                if Requirement.postgres.skips("\(block)") { continue }
                let server = try TestPostgres.serverURL()
                try TestPostgres.psql(server, "DROP DATABASE IF EXISTS jobs WITH (FORCE)")
                try TestPostgres.psql(server, "CREATE DATABASE jobs")
                blockEnvironment.merge(try Self.libpqVariables(server)) { $1 }
            }
            let missing = ["socat", "jq", "cc", "make"].filter { tool in
                block.script.contains(tool + " ") && !Self.onPath(tool)
            }
            let packages = missing.map { $0 == "cc" ? "gcc" : $0 }.joined(separator: " ")
            let tools = Requirement("needs \(missing.joined(separator: ", ")): apt-get install \(packages)") {
                missing.isEmpty ? nil : "\(missing.joined(separator: ", ")) not on PATH"
            }
            if tools.skips("\(block)") { continue }
            let scriptFile = scratch.file("block-\(block.line).sh")
            try ("cd '\(work)'\n" + block.script).write(toFile: scriptFile, atomically: true, encoding: .utf8)
            let child = try ChildProcess(["-e", "-o", "pipefail", scriptFile], executable: "/bin/bash",
                                         environment: blockEnvironment, ownProcessGroup: true)
            if let lines = block.stopsAfterLines {
                let reached = child.waitForStdoutLines(lines, timeout: TestTiming.scaled(60))
                child.send(signalToGroup: SIGTERM)
                _ = child.waitForExit(timeout: TestTiming.scaled(30))
                #expect(reached, "\(block) printed \(ChildProcess.lines(child.stdout).count) of \(lines) lines:\n\(child.stderr)")
            } else {
                let status = child.waitForExit(timeout: TestTiming.scaled(120))
                #expect(status == .exited(0), "\(block) ended \(status):\n\(block.script)\nstdout:\n\(child.stdout)\nstderr:\n\(child.stderr)")
                child.send(signalToGroup: SIGKILL)  // anything a failed block left behind
            }
            print("\(block): ran, \(ChildProcess.lines(child.stdout).count) lines of output")
            if block == blocks.first {
                let output = child.stdout + child.stderr
                for line in Self.documentedSampleOutput(in: readme) {
                    #expect(output.contains(line), "the README shows '\(line)', which the sample job did not print")
                }
            }
        }
    }

    @Test("the uninstall block removes all that install, sdk, sdk --kit and new write under the data folder, but plug-ins")
    func uninstallLeavesNothing() throws {
        let readme = try String(contentsOfFile: TestPostgres.repository + "/README.md", encoding: .utf8)
        let install = try #require(Self.blocks(in: readme).first { $0.script.contains("install -Dm755") })
        let uninstall = try #require(Self.blocks(in: readme).first { $0.script.contains("rm -f ~/.local/bin/xcallback") })
        for keepsAPlugin in [false, true] {
            let scratch = try Scratch()
            let home = scratch.file("home"), bin = scratch.file("bin")
            #expect(mkdir(home, 0o755) == 0 && mkdir(bin, 0o755) == 0)
            // A copy away from the checkout writes the header and the kits
            // to the data folder, as an installed binary does.
            let copy = try ChildProcess(["/bin/cp", Products.xcallback, bin + "/xcallback"], executable: "/usr/bin/env")
            #expect(copy.waitForExit(timeout: 30) == .exited(0))
            let environment = ["HOME": home, "LANG": "C.UTF-8", "PATH": "\(bin):/usr/bin:/bin"]
            // The install block's folders; then what sdk, sdk --kit and new write.
            let folders = install.script.components(separatedBy: "\n").filter { $0.hasPrefix("mkdir -p ") }.joined(separator: "\n")
            let setup = folders + """

                cd "$HOME" && xcallback sdk > /dev/null && xcallback sdk --kit > /dev/null
                xcallback new tried --language rust > /dev/null
                \(keepsAPlugin ? "cp tried/src/lib.rs ~/.local/share/xcallback/plugins/libmine.so" : "")
                """
            for script in [setup, uninstall.script] {
                let child = try ChildProcess(["-e", "-o", "pipefail", "-c", script], executable: "/bin/bash", environment: environment)
                #expect(child.waitForExit(timeout: TestTiming.scaled(60)) == .exited(0), "\(script)\n\(child.stderr)")
            }
            let data = home + "/.local/share/xcallback"
            if keepsAPlugin {
                #expect((try? FileManager.default.contentsOfDirectory(atPath: data)) == ["plugins"], "the plug-ins stay, alone")
                #expect(access(data + "/plugins/libmine.so", F_OK) == 0)
            } else {
                #expect(access(data, F_OK) != 0, "left: \((try? FileManager.default.subpathsOfDirectory(atPath: data)) ?? [])")
            }
        }
    }

    @Test("no link in the README or the docs points outside the repository, and every file a link names exists")
    func links() throws {
        let root = TestPostgres.repository
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs").filter { $0.hasSuffix(".md") }
        for file in ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"] + docs.map({ "docs/" + $0 }) {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            // Code blocks show commands and URLs, not links.
            let prose = text.components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 0 }.map(\.element).joined()
            var rest = prose[...]
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                let link = String(after[..<close])
                rest = after[close...]
                #expect(!link.contains("://"), "\(file) links outside the repository: \(link)")
                let path = String(link.prefix { $0 != "#" })
                guard !path.isEmpty, !link.contains("://") else { continue }
                let folder = file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) + "/" : ""
                #expect(access(root + "/" + folder + path, F_OK) == 0, "\(file) links to \(path), which does not exist")
            }
        }
    }

    private static func onPath(_ tool: String) -> Bool {
        ["/usr/local/bin", "/usr/bin", "/bin"].contains { access($0 + "/" + tool, X_OK) == 0 }
    }

    /// PGHOST and PGUSER for the test server's URL (`postgresql://USER@/postgres?host=FOLDER`).
    private static func libpqVariables(_ url: String) throws -> [String: String] {
        guard let components = URLComponents(string: url), let host = components.queryItems?.first(where: { $0.name == "host" })?.value
        else { throw HarnessError("cannot read the test server's URL \(url)") }
        var variables = ["PGHOST": host]
        if let user = components.user { variables["PGUSER"] = user }
        if let port = components.port { variables["PGPORT"] = String(port) }
        return variables
    }
}

extension ReadmeTests.Block: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool { lhs.line == rhs.line }
}
