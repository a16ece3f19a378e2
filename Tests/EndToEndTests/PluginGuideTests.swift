import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every shell block of docs/plugin-guide.md runs as written, in order, in
/// one fresh HOME with the built `xcallback` on PATH, and a block written as
/// a transcript (`$ command` lines, each followed by what it prints) prints
/// exactly that (an ellipsis in a shown line stands for what differs between
/// machines). The working folder carries over from one block to the next,
/// as it would for an author following the guide (chapter 1 `cd`s into the
/// copied example, and later chapters build there).
///
/// A comment line just before a block may say `<!-- guide-test: needs cargo -->`
/// (skipped, saying so, where cargo does not run; failed under CI) or
/// `<!-- guide-test: skip, REASON -->`, where REASON names the test that runs
/// the same commands.
@Suite("Plug-in guide command blocks", .ownThreads, .scaledTimeLimit(minutes: 4))
struct PluginGuideTests {
    struct Block: CustomStringConvertible, Sendable {
        let line: Int
        let lines: [String]
        let directive: String
        var description: String { "docs/plugin-guide.md:\(line)" }

        var isTranscript: Bool { lines.contains { $0.hasPrefix("$ ") } }

        /// The transcript's commands, each with the output lines shown after it.
        var steps: [(command: String, output: [String])] {
            var steps: [(command: String, output: [String])] = []
            var continuing = false
            for line in lines {
                if line.hasPrefix("$ ") || continuing {
                    let text = line.hasPrefix("$ ") ? String(line.dropFirst(2)) : line
                    if continuing { steps[steps.count - 1].command += "\n" + text } else { steps.append((text, [])) }
                    continuing = line.hasSuffix("\\")
                } else if !steps.isEmpty {
                    steps[steps.count - 1].output.append(line)
                }
            }
            return steps
        }

        /// The script to run: a transcript's commands, each after a marker
        /// line on stdout, so its output can be told from the next one's.
        var script: String {
            guard isTranscript else { return lines.joined(separator: "\n") + "\n" }
            return steps.enumerated().map { index, step in
                "echo '\(PluginGuideTests.marker)\(index)'\n\(step.command)\n"
            }.joined()
        }
    }

    static let marker = "@@guide-step "

    static func blocks(in guide: String) -> [Block] {
        ShellBlock.all(in: guide, directivePrefix: "<!-- guide-test:").map {
            Block(line: $0.line, lines: $0.lines, directive: $0.directive)
        }
    }

    /// What one block did.
    struct Ran: Sendable {
        var block: Block
        var skipped: String?
        var status: ExitStatus?
        var stdout = ""
        var stderr = ""
    }

    @Test("every ```sh block of the plug-in guide runs as written in a fresh HOME, in order, printing what it shows")
    func everyBlockRuns() async throws {
        let guide = try String(contentsOfFile: TestPostgres.repository + "/docs/plugin-guide.md", encoding: .utf8)
        let blocks = Self.blocks(in: guide)
        #expect(blocks.count >= 9, "the guide's shell blocks were not found")
        let runs = try await offCooperativePool { try Self.run(blocks) }
        for run in runs {
            let block = run.block
            if let reason = run.skipped {
                #expect(!(Requirement.underCI && block.directive.contains("needs")), "\(block): \(reason), which CI provides")
                print("\(block): skipped, \(reason)")
                continue
            }
            #expect(run.status == .exited(0),
                    "\(block) ended \(String(describing: run.status)):\n\(block.script)\nstdout:\n\(run.stdout)\nstderr:\n\(run.stderr)")
            guard block.isTranscript else { continue }
            let printed = Self.stepOutputs(run.stdout)
            for (index, step) in block.steps.enumerated() where !step.output.isEmpty {
                let got = index < printed.count ? printed[index] : []
                let matches = got.count == step.output.count && zip(got, step.output).allSatisfy(Self.matches)
                #expect(matches, "\(block): `\(step.command)` printed\n\(got.joined(separator: "\n"))\nwhere the guide shows\n\(step.output.joined(separator: "\n"))")
            }
        }
    }

    /// Whether a printed line is the one the guide shows; an ellipsis there
    /// stands for what differs between machines (the sandbox layers the
    /// kernel lends), so the text before it must start the line and the
    /// text after it end it.
    static func matches(_ printed: String, _ shown: String) -> Bool {
        guard let ellipsis = shown.range(of: "…") else { return printed == shown }
        let (head, tail) = (shown[..<ellipsis.lowerBound], shown[ellipsis.upperBound...])
        return printed.count >= head.count + tail.count && printed.hasPrefix(head) && printed.hasSuffix(tail)
    }

    /// Each step's stdout lines, split at the markers.
    static func stepOutputs(_ stdout: String) -> [[String]] {
        var outputs: [[String]] = []
        for line in ChildProcess.lines(stdout) {
            if line.hasPrefix(marker) { outputs.append([]) } else if !outputs.isEmpty { outputs[outputs.count - 1].append(line) }
        }
        return outputs
    }

    /// Runs the blocks in one scratch HOME (on the caller's thread: it waits
    /// for processes).
    static func run(_ blocks: [Block]) throws -> [Ran] {
        let scratch = try Scratch()
        let work = scratch.file("work"), home = scratch.file("home"), runtime = scratch.file("runtime")
        for folder in [work, home] { mkdir(folder, 0o755) }
        mkdir(runtime, 0o700)
        for name in ["Examples", "Plugins", "docs", "bindings", "Sources"] {
            symlink(TestPostgres.repository + "/" + name, work + "/" + name)
        }
        let cwdFile = scratch.file("cwd")
        try (work + "\n").write(toFile: cwdFile, atomically: true, encoding: .utf8)
        let path = "\(Products.directory):\(home)/.cargo/bin:/usr/local/bin:/usr/bin:/bin"
        var environment = ["HOME": home, "XDG_RUNTIME_DIR": runtime, "LANG": "C.UTF-8", "PATH": path]
        // cargo and rustup find their toolchains from the real HOME.
        for name in ["CARGO_HOME", "RUSTUP_HOME"] { environment[name] = ProcessInfo.processInfo.environment[name] }
        if environment["RUSTUP_HOME"] == nil, let real = ProcessInfo.processInfo.environment["HOME"] {
            environment["RUSTUP_HOME"] = real + "/.rustup"
            environment["CARGO_HOME"] = real + "/.cargo"
        }
        var runs: [Ran] = []
        for block in blocks {
            if let range = block.directive.range(of: "skip, ") {
                runs.append(Ran(block: block, skipped: String(block.directive[range.upperBound...].dropLast(4))))
                continue
            }
            if block.directive.contains("needs cargo"), let missing = Self.cargoProblem(environment) {
                runs.append(Ran(block: block, skipped: missing))
                continue
            }
            let scriptFile = scratch.file("block-\(block.line).sh")
            let script = "cd \"$(cat '\(cwdFile)')\"\n" + block.script + "pwd > '\(cwdFile)'\n"
            try script.write(toFile: scriptFile, atomically: true, encoding: .utf8)
            let child = try ChildProcess(["-e", "-o", "pipefail", scriptFile], executable: "/bin/bash",
                                         environment: environment, ownProcessGroup: true)
            let status = child.waitForExit(timeout: TestTiming.scaled(180))
            child.send(signalToGroup: SIGKILL)  // anything a failed block left behind
            runs.append(Ran(block: block, status: status, stdout: child.stdout, stderr: child.stderr))
        }
        return runs
    }

    /// Why cargo cannot build in the guide's environment (its PATH), or nil
    /// when `cargo --version` runs there.
    static func cargoProblem(_ environment: [String: String]) -> String? {
        Requirement.toolProblem(["/bin/sh", "-c", "cargo --version"], environment: environment)
            .map { "\($0); \(Requirement.cargo.need)" }
    }
}
