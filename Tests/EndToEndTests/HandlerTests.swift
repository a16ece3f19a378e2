import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 10: `install-handler` / `uninstall-handler` make xcallback the
/// desktop's handler for URL schemes; shell completions and the manual
/// page show only the public commands.
@Suite("scheme handler and completions", .ownThreads)
struct HandlerTests {
    static let request = "calc://x-callback-url/add?lhs=1&rhs=2"

    @Test("install-handler writes one entry per scheme and makes each the default through xdg-mime")
    func installWithXDGMime() throws {
        let desktop = try DesktopSandbox()
        try desktop.installRecordingTool("xdg-mime")
        try desktop.installRecordingTool("update-desktop-database")
        let fifo = desktop.scratch.file("host.fifo")

        let result = try desktop.run(["install-handler", "--fifo", fifo, "Calc", "my.app", "calc"])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty, "stderr: \(result.stderr)")

        let binary = canonicalPath(Products.xcallback)
        for scheme in ["calc", "my.app"] {
            let text = try String(contentsOfFile: desktop.desktopFile(scheme), encoding: .utf8)
            #expect(DesktopEntryReader.value(of: "Type", in: text) == "Application")
            #expect(DesktopEntryReader.value(of: "NoDisplay", in: text) == "true")
            #expect(DesktopEntryReader.value(of: "MimeType", in: text) == "x-scheme-handler/\(scheme);")
            #expect(DesktopEntryReader.value(of: "Name", in: text)?.isEmpty == false)
            let exec = try #require(DesktopEntryReader.value(of: "Exec", in: text))
            #expect(exec == "\(binary) send --fifo \(fifo) -- %u")
            #expect(try DesktopEntryReader.commandLine(exec: exec, url: Self.request)
                    == [binary, "send", "--fifo", fifo, "--", Self.request])
            var info = stat()
            #expect(stat(desktop.desktopFile(scheme), &info) == 0 && info.st_mode & 0o777 == 0o644)
        }
        // A scheme given twice (in any case) is installed once; nothing else is written.
        #expect(try FileManager.default.contentsOfDirectory(atPath: desktop.applications).sorted()
                == ["xcallback-calc.desktop", "xcallback-my.app.desktop"])
        #expect(desktop.calls(of: "xdg-mime") == [
            "[default][xcallback-calc.desktop][x-scheme-handler/calc]",
            "[default][xcallback-my.app.desktop][x-scheme-handler/my.app]",
        ])
        #expect(desktop.calls(of: "update-desktop-database") == ["[\(desktop.applications)]"])
        #expect(result.stdout.contains("made xcallback-calc.desktop the default handler of x-scheme-handler/calc"), "stdout: \(result.stdout)")
    }

    @Test("without xdg-mime on PATH the entry is still written, and the message gives the mimeapps.list line; exit 0")
    func installWithoutXDGMime() throws {
        let desktop = try DesktopSandbox()
        let result = try desktop.run(["install-handler", "calc"])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        #expect(access(desktop.desktopFile("calc"), R_OK) == 0)
        #expect(result.stderr.contains("xdg-mime is not on PATH"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("[Default Applications] in \(desktop.mimeAppsList)"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("x-scheme-handler/calc=xcallback-calc.desktop;"), "stderr: \(result.stderr)")
        // Nothing was associated behind the user's back.
        #expect(access(desktop.mimeAppsList, F_OK) != 0)
        // Without --fifo the entry leaves the FIFO to `send`'s default when it runs.
        let text = try String(contentsOfFile: desktop.desktopFile("calc"), encoding: .utf8)
        let exec = try #require(DesktopEntryReader.value(of: "Exec", in: text))
        #expect(try DesktopEntryReader.commandLine(exec: exec, url: Self.request)
                == [canonicalPath(Products.xcallback), "send", "--", Self.request])
    }

    @Test("the Exec line, split and run as the spec tells a launcher, reaches a host on a FIFO with an awkward path",
          .scaledTimeLimit(minutes: 1))
    func execReachesTheHost() throws {
        let host = try HostFixture(["Calculator"])
        let directory = host.scratch.file("a dir 'with' \"quotes\"")
        try #require(mkdir(directory, 0o700) == 0)
        let fifo = directory + "/50% $HOME `x` \\ (1).fifo"
        let child = try host.start(["--fifo", fifo, "--output", "jsonl"], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "the host never opened \(fifo); stderr: \(child.stderr)")

        let desktop = try DesktopSandbox()
        let installed = try desktop.run(["install-handler", "--fifo", fifo, "calc"])
        #expect(installed.status == .exited(0), "stderr: \(installed.stderr)")
        let text = try String(contentsOfFile: desktop.desktopFile("calc"), encoding: .utf8)
        let exec = try #require(DesktopEntryReader.value(of: "Exec", in: text))
        let command = try DesktopEntryReader.commandLine(exec: exec, url: Self.request)
        #expect(command == [canonicalPath(Products.xcallback), "send", "--fifo", fifo, "--", Self.request], "Exec=\(exec)")

        let launched = try desktop.run(Array(command.dropFirst()), executable: command[0])
        #expect(launched.status == .exited(0), "stderr: \(launched.stderr)")
        // After `--`, a URL that looks like an option still goes through (and is InvalidURL).
        let dashed = try desktop.run(["send", "--fifo", fifo, "--", "-not-a-url"])
        #expect(dashed.status == .exited(0), "stderr: \(dashed.stderr)")

        #expect(child.waitForStdoutLines(2, timeout: 10), "records: \(child.stdoutLines); stderr: \(child.stderr)")
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        let records = try child.stdoutLines.map { try Record(jsonLine: $0) }
        #expect(records.first { $0.input == Self.request }?.params["result"] == "3", "\(records)")
        #expect(records.first { $0.input == "-not-a-url" }?.errorCode == "InvalidURL", "\(records)")
    }

    @Test("uninstall-handler removes the entry and only our associations; mimeapps.list keeps every other byte")
    func uninstall() throws {
        let desktop = try DesktopSandbox()
        #expect(try desktop.run(["install-handler", "calc", "other"]).status == .exited(0))
        // The user's file is a link into a dotfiles checkout; CRLF, odd spacing, no final newline.
        let dotfiles = desktop.scratch.file("dotfiles")
        try FileManager.default.createDirectory(atPath: dotfiles, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: desktop.configHome, withIntermediateDirectories: true)
        let original = """
            # my choices
            [Default Applications]
            text/html=firefox.desktop
            x-scheme-handler/calc=xcallback-calc.desktop
            x-scheme-handler/calcx=xcallback-calcx.desktop;

            [Added Associations]
            x-scheme-handler/calc=other.desktop;xcallback-calc.desktop;\r
            x-scheme-handler/calc = xcallback-calc.desktop ;\u{20}
            x-scheme-handler/other=xcallback-other.desktop;

            [Removed Associations]
            x-scheme-handler/calc=xcallback-calc.desktop;
            text/plain=gedit.desktop
            """
        let expected = """
            # my choices
            [Default Applications]
            text/html=firefox.desktop
            x-scheme-handler/calcx=xcallback-calcx.desktop;

            [Added Associations]
            x-scheme-handler/calc=other.desktop;\r
            x-scheme-handler/other=xcallback-other.desktop;

            [Removed Associations]
            x-scheme-handler/calc=xcallback-calc.desktop;
            text/plain=gedit.desktop
            """
        try Data(original.utf8).write(to: URL(fileURLWithPath: dotfiles + "/mimeapps.list"))
        try FileManager.default.createSymbolicLink(atPath: desktop.mimeAppsList, withDestinationPath: dotfiles + "/mimeapps.list")
        // The deprecated location some tools still write.
        let legacy = desktop.applications + "/mimeapps.list"
        try Data("[Default Applications]\nx-scheme-handler/calc=xcallback-calc.desktop\n".utf8).write(to: URL(fileURLWithPath: legacy))

        let removed = try desktop.run(["uninstall-handler", "CALC"])
        #expect(removed.status == .exited(0), "stderr: \(removed.stderr)")
        #expect(access(desktop.desktopFile("calc"), F_OK) != 0)
        #expect(access(desktop.desktopFile("other"), F_OK) == 0)
        #expect(try String(contentsOfFile: dotfiles + "/mimeapps.list", encoding: .utf8) == expected)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: desktop.mimeAppsList) == dotfiles + "/mimeapps.list")
        #expect(try String(contentsOfFile: legacy, encoding: .utf8) == "[Default Applications]\n")
        #expect(removed.stdout.contains("removed \(desktop.desktopFile("calc"))"), "stdout: \(removed.stdout)")
        #expect(removed.stdout.contains("from \(desktop.mimeAppsList)"), "stdout: \(removed.stdout)")

        // Again: nothing left, and it says so.
        let again = try desktop.run(["uninstall-handler", "calc"])
        #expect(again.status == .exited(0), "stderr: \(again.stderr)")
        #expect(again.stdout.contains("nothing to remove for calc"), "stdout: \(again.stdout)")
        #expect(try String(contentsOfFile: dotfiles + "/mimeapps.list", encoding: .utf8) == expected)
    }

    @Test("a desktop file of the same name that xcallback did not write is left alone")
    func foreignDesktopFile() throws {
        let desktop = try DesktopSandbox()
        try FileManager.default.createDirectory(atPath: desktop.applications, withIntermediateDirectories: true)
        let foreign = "[Desktop Entry]\nType=Application\nName=Mine\nExec=mine %u\n"
        try Data(foreign.utf8).write(to: URL(fileURLWithPath: desktop.desktopFile("calc")))

        let install = try desktop.run(["install-handler", "calc"])
        #expect(install.status == .exited(1))
        #expect(install.stderr.contains("was not written by xcallback"), "stderr: \(install.stderr)")
        let uninstall = try desktop.run(["uninstall-handler", "calc"])
        #expect(uninstall.status == .exited(1))
        #expect(uninstall.stderr.contains("left alone"), "stderr: \(uninstall.stderr)")
        #expect(try String(contentsOfFile: desktop.desktopFile("calc"), encoding: .utf8) == foreign)
    }

    @Test("invalid and standard schemes are refused with a reason, and nothing is written",
          arguments: [("c@lc", "'@' is not allowed"), ("calc://", "without ':' or '://'"), ("1calc", "must start with a letter"),
                      ("", "cannot be empty"), ("HTTPS", "standard scheme")])
    func refusedSchemes(scheme: String, reason: String) throws {
        let desktop = try DesktopSandbox()
        try desktop.installRecordingTool("xdg-mime")
        let result = try desktop.run(["install-handler", "calc", scheme])
        #expect(result.status == .exited(64), "stderr: \(result.stderr)")
        #expect(result.stderr.contains(reason), "stderr: \(result.stderr)")
        #expect(access(desktop.applications, F_OK) != 0)
        #expect(desktop.calls(of: "xdg-mime").isEmpty)
    }

    // MARK: Real desktop tools, when the machine has them

    @Test("real xdg-utils: xdg-mime answers with our entry, and xdg-open reaches the host",
          .requires(.xdgUtils),
          .scaledTimeLimit(minutes: 1))
    func realXDGUtils() throws {
        let host = try HostFixture(["Calculator"])
        let fifo = host.scratch.file("host.fifo")
        let child = try host.start(["--fifo", fifo, "--output", "jsonl"], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")

        let desktop = try DesktopSandbox()
        let installed = try desktop.run(["install-handler", "--fifo", fifo, "calc"], systemPath: true)
        #expect(installed.status == .exited(0), "stderr: \(installed.stderr)")
        let query = try desktop.run(["query", "default", "x-scheme-handler/calc"],
                                    executable: try #require(executableOnPath("xdg-mime")), systemPath: true)
        #expect(query.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "xcallback-calc.desktop",
                "stdout: \(query.stdout) stderr: \(query.stderr)")
        // No desktop session: xdg-open takes its generic path, which needs a display to exist.
        let opened = try desktop.run([Self.request], executable: try #require(executableOnPath("xdg-open")),
                                     systemPath: true, extra: ["DISPLAY": ":0"])
        #expect(opened.status == .exited(0), "stderr: \(opened.stderr)")
        #expect(child.waitForStdoutLines(1, timeout: 10), "stderr: \(child.stderr)")
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        #expect(try child.stdoutLines.map { try Record(jsonLine: $0) }.first?.params["result"] == "3")
    }

    @Test("GLib's launcher (gio open) runs the quoted Exec line, with the mimeapps.list line we print, and reaches the host",
          .requires(.gio),
          .scaledTimeLimit(minutes: 1))
    func gioOpen() throws {
        let host = try HostFixture(["Calculator"])
        let fifo = host.scratch.file("q dir") + "/50% $x \"y\".fifo"
        try #require(mkdir(host.scratch.file("q dir"), 0o700) == 0)
        let child = try host.start(["--fifo", fifo, "--output", "jsonl"], stdin: .null)
        try #require(waitForFIFOReader(fifo, host: child), "stderr: \(child.stderr)")

        // No xdg-mime here: the association is the line the message tells the user to add.
        let desktop = try DesktopSandbox()
        let installed = try desktop.run(["install-handler", "--fifo", fifo, "calc"])
        #expect(installed.status == .exited(0), "stderr: \(installed.stderr)")
        let line = try #require(installed.stderr.split(separator: "\n").first { $0.hasPrefix("  x-scheme-handler/calc=") })
        try FileManager.default.createDirectory(atPath: desktop.configHome, withIntermediateDirectories: true)
        try Data("[Default Applications]\n\(line.dropFirst(2))\n".utf8).write(to: URL(fileURLWithPath: desktop.mimeAppsList))
        let opened = try desktop.run(["open", Self.request], executable: try #require(executableOnPath("gio")))
        #expect(opened.status == .exited(0), "stderr: \(opened.stderr)")
        #expect(child.waitForStdoutLines(1, timeout: 10), "stderr: \(child.stderr)")
        child.send(signal: SIGTERM)
        #expect(child.waitForExit(timeout: 10) == .exited(0))
        #expect(try child.stdoutLines.map { try Record(jsonLine: $0) }.first?.params["result"] == "3")
    }

    // MARK: Completions and the manual page

    @Test("shell completions name the public subcommands and never the internal ones", arguments: ["bash", "zsh", "fish"])
    func completions(shell: String) throws {
        let result = try xcallback(["--generate-completion-script", shell])
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        for command in ["run", "plugins", "routes", "check", "send", "call", "sdk", "install-handler", "uninstall-handler"] {
            #expect(result.stdout.contains(command), "\(shell) completions lack \(command)")
        }
        #expect(!result.stdout.contains("__worker") && !result.stdout.contains("__probe"))
    }

    @Test("help and the manual page's source (--experimental-dump-help) leave the internal commands out")
    func manualSource() throws {
        for arguments in [["--experimental-dump-help"], ["--help"]] {
            let result = try xcallback(arguments)
            #expect(result.status == .exited(0), "stderr: \(result.stderr)")
            #expect(result.stdout.contains("install-handler"))
            #expect(!result.stdout.contains("__worker") && !result.stdout.contains("__probe"), "\(arguments)")
        }
    }
}
