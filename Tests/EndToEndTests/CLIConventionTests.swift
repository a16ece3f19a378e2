import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The command line's Unix habits (issue 21; clig.dev, jq, rg, fd): a
/// version, FILE arguments, help that documents, one error style with
/// suggestions, Ctrl-C that stops cleanly with 130, a closed stdout that
/// ends quietly, plug-in folders that are skipped or reported as they
/// should be, and an `--open` COMMAND checked at start-up.
@Suite("CLI conventions", .ownThreads)
struct CLIConventionTests {
    private static let add = "calc://x-callback-url/add?lhs=1&rhs=1"

    /// Every line of `stderr` is in the one error style.
    private static func isOneStyle(_ stderr: String) -> Bool {
        let lines = ChildProcess.lines(stderr)
        return !lines.isEmpty && lines.allSatisfy { $0.hasPrefix("xcallback: ") }
            && !stderr.contains("Error:") && !stderr.contains("Usage:")
    }

    // MARK: --version

    @Test("--version prints the version and exits 0")
    func version() throws {
        let result = try xcallback(["--version"])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(result.stdout == "0.9.0\n")
        #expect(result.stderr.isEmpty)
    }

    // MARK: FILE arguments

    @Test("run FILE - FILE: each file in turn, '-' is stdin; -k orders within each", .scaledTimeLimit(minutes: 1))
    func fileArguments() throws {
        let host = try HostFixture(["Calculator", "Faulty"])
        let first = host.scratch.file("first.txt")
        let second = host.scratch.file("second.txt")
        // The sleep makes completion order differ from input order.
        try "faulty://x-callback-url/sleep?ms=200\ncalc://x-callback-url/add?lhs=1&rhs=1\n"
            .write(toFile: first, atomically: true, encoding: .utf8)
        try "calc://x-callback-url/add?lhs=4&rhs=4\n".write(toFile: second, atomically: true, encoding: .utf8)
        let stdin = ["calc://x-callback-url/add?lhs=3&rhs=3"]

        let ordered = try host.run(["-k", first, "-", second], lines: stdin)
        #expect(ordered.status == .exited(0), "stderr: \(ordered.stderr)")
        #expect(ordered.lines == ["success?slept=200", "success?result=2", "success?result=6", "success?result=8"])

        // Without -k: completion order within a file, but the files in turn.
        let unordered = try host.run([first, "-", second], lines: stdin)
        #expect(unordered.status == .exited(0), "stderr: \(unordered.stderr)")
        #expect(unordered.lines == ["success?result=2", "success?slept=200", "success?result=6", "success?result=8"])

        // A file alone does not read stdin.
        let alone = try host.run([second], lines: stdin)
        #expect(alone.lines == ["success?result=8"])
    }

    @Test("run FILE: an unreadable FILE is an error at start-up (1); FILE with --fifo, --socket or --queue is a usage error (64)")
    func fileArgumentErrors() throws {
        let host = try HostFixture(["Calculator"])
        let missing = host.scratch.file("missing.txt")
        let unreadable = try host.run([missing], lines: [Self.add])
        #expect(unreadable.status == .exited(1))
        #expect(unreadable.stdout.isEmpty)
        #expect(unreadable.stderr == "xcallback: \(missing): No such file or directory\n")

        let folder = try host.run([host.scratch.path], lines: [Self.add])
        #expect(folder.status == .exited(1))
        #expect(folder.stderr == "xcallback: \(host.scratch.path): is a directory\n")

        let file = host.scratch.file("requests.txt")
        try "\(Self.add)\n".write(toFile: file, atomically: true, encoding: .utf8)
        for served in [["--fifo", host.scratch.file("x.fifo")], ["--socket", host.scratch.file("x.sock")],
                       ["--queue", "postgresql://localhost/none"]] {
            let result = try host.run(served + [file], lines: [])
            if served[0] == "--queue" && !TestPostgres.queueBuilt {
                // A build without the queue: `xcallback-queue` says how to get it.
                #expect(result.status == .exited(2), "\(served): \(result.stderr)")
                #expect(result.stderr.contains("swift build --traits Queue"), "\(served): \(result.stderr)")
                continue
            }
            #expect(result.status == .exited(64), "\(served): \(result.stderr)")
            #expect(result.stderr.contains("FILE arguments"), "\(served): \(result.stderr)")
            #expect(Self.isOneStyle(result.stderr), "\(served): \(result.stderr)")
            #expect(access(served[1], F_OK) != 0, "\(served): created")
        }
    }

    // MARK: run --help

    @Test("run --help: what it reads and writes, grouped options, examples, exit codes, signals")
    func runHelp() throws {
        let result = try xcallback(["run", "--help"])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        let help = result.stdout
        for text in ["from each FILE in turn", "to stdout", "go to stderr",
                     "INPUT:", "PLUG-INS:", "LIMITS:", "OUTPUT:", "DIAGNOSTICS:",
                     "Examples:", "xcallback run", "Exit status:", "130", "64", "Signals:", "SIGINT", "SIGTERM",
                     "SIGHUP", "SIGUSR1"] {
            #expect(help.contains(text), "missing \(text)")
        }
        // Each option sits in its group.
        func section(_ title: String) -> Substring {
            guard let start = help.range(of: "\n\(title):\n") else { return "" }
            let rest = help[start.upperBound...]
            return rest[..<(rest.range(of: "\n\n")?.lowerBound ?? rest.endIndex)]
        }
        #expect(section("INPUT").contains("--fifo"))
        #expect(section("INPUT").contains("<file>"))
        #expect(section("PLUG-INS").contains("--plugins"))
        #expect(section("PLUG-INS").contains("--sandbox"))
        #expect(section("PLUG-INS").contains("--isolation"))
        #expect(section("LIMITS").contains("--timeout"))
        #expect(section("OUTPUT").contains("--keep-order"))
        #expect(section("OUTPUT").contains("--open"))
        #expect(section("DIAGNOSTICS").contains("--log-level"))
    }

    // MARK: errors

    @Test("a typo'd command gets a suggestion, in the one error style (64)",
          arguments: [("rnu", "run"), ("plugns", "plugins"), ("chek", "check"), ("rotues", "routes")])
    func commandSuggestion(typo: String, meant: String) throws {
        let result = try xcallback([typo])
        #expect(result.status == .exited(64))
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "xcallback: unknown command '\(typo)'; did you mean '\(meant)'?\n")
    }

    @Test("usage errors from the parser come in the one error style, with a suggestion where one is close")
    func oneErrorStyle() throws {
        let typo = try xcallback(["run", "--keep-ordr"])
        #expect(typo.status == .exited(64))
        #expect(typo.stderr.contains("'--keep-order'"), "stderr: \(typo.stderr)")
        #expect(Self.isOneStyle(typo.stderr), "stderr: \(typo.stderr)")
        #expect(ChildProcess.lines(typo.stderr).count == 1, "stderr: \(typo.stderr)")

        let far = try xcallback(["frobnicate"])
        #expect(far.status == .exited(64))
        #expect(Self.isOneStyle(far.stderr), "stderr: \(far.stderr)")
        #expect(far.stderr.contains("run, plugins"), "stderr: \(far.stderr)")

        let validation = try xcallback(["run", "--timeout", "0"])
        #expect(validation.status == .exited(64))
        #expect(Self.isOneStyle(validation.stderr), "stderr: \(validation.stderr)")
        #expect(validation.stderr.contains("--timeout must be a positive number"), "stderr: \(validation.stderr)")

        // A command's own error: the same style, status 1.
        let own = try xcallback(["run", "--plugins", "/nonexistent/xcallback-plugins"])
        #expect(own.status == .exited(1))
        #expect(Self.isOneStyle(own.stderr), "stderr: \(own.stderr)")
    }

    @Test("an invalid enum value lists the valid ones", arguments: [
        ("--isolation", ["process", "none"]), ("--output", ["url", "jsonl"]), ("--log-format", ["text", "json"]),
        ("--sandbox", ["auto", "strict", "off"]),
        ("--log-level", ["trace", "debug", "info", "notice", "warning", "error", "critical"]),
    ])
    func enumValues(option: String, values: [String]) throws {
        let result = try xcallback(["run", option, "bogus"])
        #expect(result.status == .exited(64))
        #expect(Self.isOneStyle(result.stderr), "stderr: \(result.stderr)")
        #expect(ChildProcess.lines(result.stderr).count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("'bogus'"), "stderr: \(result.stderr)")
        for value in values {
            #expect(result.stderr.contains("'\(value)'"), "\(value) missing: \(result.stderr)")
        }
    }

    // MARK: signals

    /// What a stop must never show: a worker taken for crashed or restarted.
    private static func falseCrashLines(_ stderr: String) -> [String] {
        ChildProcess.lines(stderr).filter {
            $0.contains("restarting") || $0.contains("replacing") || $0.contains("was killed") || $0.contains("PluginCrashed")
                || $0.contains("crashed") && !$0.contains("(crashed 0,") || looksLikeACrash($0)
        }
    }

    @Test("Ctrl-C (SIGINT to the terminal's foreground group) on run reading stdin: exit 130, no false crash lines; SIGTERM: exit 0",
          .scaledTimeLimit(minutes: 1), arguments: [SIGINT, SIGTERM])
    func interrupt(signal: Int32) throws {
        let host = try HostFixture(["Calculator", "Faulty"], isolation: "process")
        // The host leads its own group, as a shell's foreground job does; the
        // signal goes to the whole group, as the terminal sends it.
        let child = try ChildProcess(host.runPrefix, stdin: .pipe, ownProcessGroup: true)
        child.write("faulty://x-callback-url/sleep?ms=300\n\(Self.add)\n")
        // The calc record proves both workers run and the sleep is in flight.
        try #require(child.waitForStdoutLines(1, timeout: 20), "stderr: \(child.stderr)")
        child.send(signalToGroup: signal)
        let status = child.waitForExit(timeout: 15)
        #expect(status == .exited(signal == SIGINT ? 130 : 0), "stderr: \(child.stderr)")
        #expect(child.stdoutLines == ["success?result=2", "success?slept=300"], "stderr: \(child.stderr)")
        #expect(Self.falseCrashLines(child.stderr).isEmpty, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("xcallback: processed 2, succeeded 2, failed 0 (crashed 0,"), "stderr: \(child.stderr)")
    }

    @Test("SIGINT to the group of an idle host with workers: exit 130 at once, no false crash lines",
          .scaledTimeLimit(minutes: 1))
    func interruptIdle() throws {
        let host = try HostFixture(isolation: "process")
        let child = try ChildProcess(host.runPrefix, stdin: .pipe, ownProcessGroup: true)
        child.write("\(Self.add)\n")
        try #require(child.waitForStdoutLines(1, timeout: 20), "stderr: \(child.stderr)")
        let signalled = Date()
        child.send(signalToGroup: SIGINT)
        #expect(child.waitForExit(timeout: 15) == .exited(130), "stderr: \(child.stderr)")
        #expect(Date().timeIntervalSince(signalled) < 5)
        #expect(Self.falseCrashLines(child.stderr).isEmpty, "stderr: \(child.stderr)")
    }

    @Test("Ctrl-C with a handler that never returns: Timeout after the grace period, exit 130, the worker not taken for hung or crashed",
          .scaledTimeLimit(minutes: 1))
    func interruptHungHandler() throws {
        let host = try HostFixture(["Calculator", "Faulty"], isolation: "process")
        let child = try ChildProcess(host.runPrefix + ["--grace-period", "0.5", "--output", "jsonl"], stdin: .pipe,
                                     ownProcessGroup: true)
        child.write("faulty://x-callback-url/hang\n\(Self.add)\n")
        try #require(child.waitForStdoutLines(1, timeout: 20), "stderr: \(child.stderr)")
        // The hang has begun once the plug-in says so.
        try #require(child.waitForStderr(containing: "never returning"), "stderr: \(child.stderr)")
        child.send(signalToGroup: SIGINT)
        #expect(child.waitForExit(timeout: 15) == .exited(130), "stderr: \(child.stderr)")
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.map(\.errorCode) == [nil, "Timeout"], "\(records)")
        #expect(Self.falseCrashLines(child.stderr).isEmpty, "stderr: \(child.stderr)")
    }

    // MARK: closed stdout

    @Test("a closed stdout ends the host quietly: exit 0, no warning about the line being read",
          .scaledTimeLimit(minutes: 1))
    func closedStdout() throws {
        let host = try HostFixture(["Calculator"])
        // Like `xcallback run | head -n 1` fed by a writer that is mid-line.
        let child = try host.start(closeStdoutAfterLines: 1)
        child.write("\(Self.add)\n")
        try #require(child.waitForStdoutClosed(timeout: 10), "stderr: \(child.stderr)")
        // The next record finds stdout closed while half a line waits.
        child.write("\(Self.add)\ncalc://x-callback-url/add?lhs=")
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("unterminated"), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("warning"), "stderr: \(child.stderr)")
        #expect(!looksLikeACrash(child.stderr), "stderr: \(child.stderr)")
    }

    // MARK: plug-in folders

    /// The runner's environment with HOME at `home` and nothing naming
    /// plug-in folders: the defaults apply.
    private static func defaultsEnvironment(home: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XCALLBACK_PLUGIN_PATH"] = nil
        environment["XDG_DATA_HOME"] = nil
        environment["HOME"] = home
        return environment
    }

    private static let systemFoldersAbsent =
        access("/usr/local/lib/xcallback/plugins", F_OK) != 0 && access("/usr/lib/xcallback/plugins", F_OK) != 0

    @Test("missing default plug-in folders are skipped silently; run with no plug-in says which folders it searched",
          .enabled(if: systemFoldersAbsent, "an xcallback is installed system-wide here (/usr/lib or /usr/local/lib/xcallback/plugins)"),
          .scaledTimeLimit(minutes: 1))
    func missingDefaultFolders() throws {
        let scratch = try Scratch()
        let environment = Self.defaultsEnvironment(home: scratch.path)
        let child = try ChildProcess(["run", "--isolation", "none"], stdin: .bytes(Array("\(Self.add)\n".utf8)),
                                     environment: environment)
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        let searched = "\(scratch.path)/.local/share/xcallback/plugins, /usr/local/lib/xcallback/plugins, /usr/lib/xcallback/plugins"
        #expect(child.stderr.contains("no plug-in loaded; searched \(searched)"), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("skipping"), "stderr: \(child.stderr)")
        #expect(!child.stderr.contains("No such file"), "stderr: \(child.stderr)")

        // A long-running host watches the folders: a missing one is no warning there either.
        let fifo = scratch.file("requests.fifo")
        let served = try ChildProcess(["run", "--isolation", "none", "--fifo", fifo], environment: environment)
        try #require(waitForFIFOReader(fifo, host: served), "stderr: \(served.stderr)")
        served.send(signal: SIGTERM)
        #expect(served.waitForExit(timeout: 10) == .exited(0), "stderr: \(served.stderr)")
        #expect(!served.stderr.contains("cannot watch"), "stderr: \(served.stderr)")
        #expect(!served.stderr.contains("No such file"), "stderr: \(served.stderr)")
    }

    @Test("a default plug-in folder that exists but cannot be used is reported, not buried")
    func unusableDefaultFolder() throws {
        let scratch = try Scratch()
        let folder = scratch.path + "/.local/share/xcallback/plugins"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Products.plugin("Calculator"), toPath: folder + "/libCalculator.so")
        chmod(folder, 0o777)
        let child = try ChildProcess(["run", "--isolation", "none"], stdin: .bytes(Array("\(Self.add)\n".utf8)),
                                     environment: Self.defaultsEnvironment(home: scratch.path))
        #expect(child.waitForExit(timeout: 10) == .exited(0), "stderr: \(child.stderr)")
        #expect(child.stderr.contains("skipping plug-in directory \(folder): refused: directory is writable by others"),
                "stderr: \(child.stderr)")
        // The listings say so too.
        let listing = try ChildProcess(["plugins"], environment: Self.defaultsEnvironment(home: scratch.path))
        #expect(listing.waitForExit(timeout: 20) == .exited(0), "stderr: \(listing.stderr)")
        #expect(listing.stderr.contains("xcallback: skipping plug-in directory \(folder): refused: directory is writable by others"),
                "stderr: \(listing.stderr)")
    }

    @Test("plugins on an empty folder says which folders it searched")
    func pluginsOnEmptyFolder() throws {
        let scratch = try Scratch()
        let empty = try scratch.pluginDirectory([], name: "empty")
        let result = try xcallback(["plugins", "--plugins", empty])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "xcallback: no plug-in files found; searched \(empty)\n")
    }

    // MARK: --open

    @Test("--open COMMAND that cannot be found is a start-up error (1), not one log line per record")
    func openCommandNotFound() throws {
        let host = try HostFixture(["Calculator"])
        let notExecutable = host.scratch.file("opener")
        try "#!/bin/sh\n".write(toFile: notExecutable, atomically: true, encoding: .utf8)
        chmod(notExecutable, 0o644)
        let cases = [
            ("xcallback-no-such-opener", "'xcallback-no-such-opener' was not found"),
            (host.scratch.file("absent"), "cannot run '\(host.scratch.file("absent"))': No such file or directory"),
            (notExecutable, "cannot run '\(notExecutable)': not executable"),
        ]
        for (command, message) in cases {
            let result = try host.run(["--open", command],
                                      lines: ["\(Self.add)&x-success=app://ok", "\(Self.add)&x-success=app://ok"])
            #expect(result.status == .exited(1), "\(command): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(command)")
            #expect(result.stderr.hasPrefix("xcallback: --open: \(message)"), "\(command): \(result.stderr)")
            #expect(ChildProcess.lines(result.stderr).count == 1, "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("succeeded"), "\(command): \(result.stderr)")
        }
    }

    // MARK: sdk, man page, completions

    @Test("sdk from a binary copied anywhere: the header it carries is written to the user's data folder, and a plug-in builds with it")
    func sdkFromCopiedBinary() throws {
        let scratch = try Scratch()
        let bin = scratch.file("bin"), home = scratch.file("home")
        mkdir(bin, 0o755); mkdir(home, 0o755)
        // Copied by cp, not by this process: a child another test spawns
        // meanwhile would inherit our descriptor writing the copy, and
        // running the copy would then fail with ETXTBSY.
        let copy = try ChildProcess([Products.xcallback, bin + "/xcallback"], executable: "/bin/cp")
        #expect(copy.waitForExit() == .exited(0))
        let environment = ["HOME": home, "PATH": "/usr/bin:/bin"]
        let first = try ChildProcess(["sdk", "--include-dir"], executable: bin + "/xcallback", environment: environment)
        #expect(first.waitForExit() == .exited(0), "stderr: \(first.stderr)")
        let folder = home + "/.local/share/xcallback/include"
        #expect(first.stdout == folder + "\n")
        let written = FileManager.default.contents(atPath: folder + "/xcallback.h")
        let original = FileManager.default.contents(atPath: TestPostgres.repository + "/bindings/swift/Sources/CXCallback/include/xcallback.h")
        #expect(written != nil && written == original,
                "the header the binary carries differs from bindings/swift/Sources/CXCallback/include/xcallback.h")
        // A stale copy is replaced; --cflags names the same folder.
        try "/* old */\n".write(toFile: folder + "/xcallback.h", atomically: true, encoding: .utf8)
        let again = try ChildProcess(["sdk", "--cflags"], executable: bin + "/xcallback", environment: environment)
        #expect(again.waitForExit() == .exited(0))
        #expect(again.stdout == "-I\(folder)\n")
        #expect(FileManager.default.contents(atPath: folder + "/xcallback.h") == original)
        if Requirement.cc.skips("the compile check of Examples/c-plugin/hello.c with the sdk's header") { return }
        let plugin = TestPostgres.repository + "/Examples/c-plugin/hello.c"
        let compile = try ChildProcess(["-std=c11", "-fsyntax-only", "-I\(folder)", plugin], executable: "/usr/bin/cc")
        #expect(compile.waitForExit(timeout: 60) == .exited(0), "cc: \(compile.stderr)")
    }

    @Test("the manual page renders with no warning from man, and names every option of run")
    func manualPage() throws {
        let page = TestPostgres.repository + "/docs/xcallback.1"
        if Requirement.man.skips("the manual page test") { return }
        let man = try ChildProcess(["--warnings", "-l", page], executable: "/usr/bin/man",
                                   environment: ["MANWIDTH": "200", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "MANPAGER": "cat"])
        #expect(man.waitForExit(timeout: 60) == .exited(0))
        #expect(man.stderr.isEmpty, "man --warnings: \(man.stderr)")
        for section in ["DESCRIPTION", "OPTIONS", "EXIT STATUS", "SIGNALS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
            #expect(man.stdout.contains("\n" + section + "\n"), "no \(section) section")
        }
        let help = try xcallback(["run", "--help"])
        let options = Set(help.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
            .map { String($0.prefix { $0.isLetter || $0.isNumber || $0 == "-" }) }
            .filter { $0.hasPrefix("--") && $0.count > 2 })
        #expect(options.count > 20)
        let rendered = man.stdout.replacingOccurrences(of: "\u{2010}", with: "-")
        for option in options.sorted() where option != "--help" {
            #expect(rendered.contains(option), "the manual page does not describe \(option)")
        }
    }

    @Test("completions complete folders after --plugins and check --plugins, files after --fifo, --socket and check, and --log-level's values", arguments: ["bash", "zsh", "fish"])
    func completions(shell: String) throws {
        let result = try xcallback(["--generate-completion-script", shell])
        #expect(result.status == .exited(0))
        let script = result.stdout
        for level in ["trace", "debug", "info", "notice", "warning", "error", "critical"] {
            #expect(script.contains(level), "\(shell): no --log-level value \(level)")
        }
        let directoryCompletion = ["bash": "-d", "zsh": "_files -/", "fish": "__fish_complete_directories"][shell]!
        #expect(script.contains(directoryCompletion), "\(shell): no folder completion")
        for option in ["plugins", "fifo", "socket", "log-level"] {
            #expect(script.contains(option), "\(shell): --\(option) missing")
        }
    }
}
