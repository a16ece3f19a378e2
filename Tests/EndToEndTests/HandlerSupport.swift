import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A private desktop for `install-handler` tests: `$HOME`, `$XDG_DATA_HOME`
/// and `$XDG_CONFIG_HOME` in a scratch directory, and a `$PATH` that holds
/// only what a test puts there (stand-in tools), optionally followed by the
/// system's directories.
final class DesktopSandbox: @unchecked Sendable {
    let scratch: Scratch
    var dataHome: String { scratch.file("data") }
    var configHome: String { scratch.file("config") }
    var applications: String { dataHome + "/applications" }
    var mimeAppsList: String { configHome + "/mimeapps.list" }
    /// Directory of stand-in tools, first on `$PATH`.
    var tools: String { scratch.file("tools") }

    init() throws {
        scratch = try Scratch()
        for directory in ["home", "tools"] {
            guard mkdir(scratch.file(directory), 0o755) == 0 else { throw HarnessError("mkdir \(directory): \(String(cString: strerror(errno)))") }
        }
    }

    func desktopFile(_ scheme: String) -> String { applications + "/xcallback-\(scheme).desktop" }

    /// The environment a command sees; `systemPath` adds /usr/bin and /bin
    /// after the stand-ins. `XDG_DATA_DIRS` points nowhere, so no system-wide
    /// entry or association can answer for ours.
    func environment(systemPath: Bool = false, extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "HOME": scratch.file("home"),
            "XDG_DATA_HOME": dataHome,
            "XDG_CONFIG_HOME": configHome,
            "XDG_DATA_DIRS": scratch.file("no-system-data"),
            "XDG_CONFIG_DIRS": scratch.file("no-system-config"),
            "PATH": tools + (systemPath ? ":/usr/bin:/bin" : ""),
            "SWIFT_BACKTRACE": "enable=no",
        ]
        environment.merge(extra) { $1 }
        return environment
    }

    /// Runs `executable ARGUMENTS` (the built xcallback by default) in this desktop until it exits.
    func run(_ arguments: [String], executable: String = Products.xcallback, systemPath: Bool = false,
             extra: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
        let start = Date()
        let child = try ChildProcess(arguments, executable: executable,
                                     environment: environment(systemPath: systemPath, extra: extra))
        let status = child.waitForExit(timeout: 20, sourceLocation: sourceLocation)
        return RunResult(status: status, stdout: child.stdout, stderr: child.stderr,
                         seconds: Date().timeIntervalSince(start))
    }

    /// A stand-in tool on `$PATH` that appends one line per call to its
    /// log: each argument in brackets, `[default][x.desktop][x-scheme-handler/x]`.
    func installRecordingTool(_ name: String) throws {
        let script = """
            #!/bin/sh
            for argument in "$@"; do printf '[%s]' "$argument"; done >> '\(toolLog(name))'
            echo >> '\(toolLog(name))'

            """
        try installScript(at: tools + "/" + name, script)
    }

    func toolLog(_ name: String) -> String { scratch.file(name + ".calls") }

    /// The calls a stand-in recorded; empty when it never ran.
    func calls(of name: String) -> [String] {
        guard let text = try? String(contentsOfFile: toolLog(name), encoding: .utf8) else { return [] }
        return ChildProcess.lines(text)
    }
}

/// Reads desktop entries the way the Desktop Entry Specification tells
/// launchers to: written here from the spec, independently of the code
/// that writes them.
enum DesktopEntryReader {
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    /// The raw value of `key` in the `[Desktop Entry]` group.
    static func value(of key: String, in text: String) -> String? {
        var inGroup = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("[") { inGroup = line == "[Desktop Entry]"; continue }
            guard inGroup, let equals = line.firstIndex(of: "=") else { continue }
            if line[..<equals].trimmingCharacters(in: .whitespaces) == key {
                return String(line[line.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// A string value with its escapes undone (`\s \n \t \r \\`).
    static func unescaped(_ value: String) throws -> String {
        var result = ""
        var characters = value.makeIterator()
        while let character = characters.next() {
            guard character == "\\" else { result.append(character); continue }
            switch characters.next() {
            case "s": result.append(" ")
            case "n": result.append("\n")
            case "t": result.append("\t")
            case "r": result.append("\r")
            case "\\": result.append("\\")
            case let other: throw Malformed(description: "unknown escape \\\(other.map(String.init) ?? "") in \(value)")
            }
        }
        return result
    }

    /// The program and arguments a launcher runs for `Exec` opening `url`:
    /// string escapes undone, then split on blanks with double-quoted words
    /// unquoted (`\"` `` \` `` `\$` `\\` inside), `%%` made `%`, and `%u`
    /// (which must stand alone, unquoted) replaced by the URL.
    static func commandLine(exec: String, url: String) throws -> [String] {
        let text = Array(try unescaped(exec))
        var words: [String] = []
        var word: String? = nil
        var index = 0
        while index < text.count {
            let character = text[index]
            switch character {
            case " ", "\t", "\n":
                if let finished = word { words.append(finished) }
                word = nil
            case "\"":
                var quoted = word ?? ""
                index += 1
                while true {
                    guard index < text.count else { throw Malformed(description: "unterminated quote in \(exec)") }
                    let inner = text[index]
                    if inner == "\"" { break }
                    if inner == "\\" {
                        guard index + 1 < text.count, "\"`$\\".contains(text[index + 1]) else {
                            throw Malformed(description: "a backslash inside quotes must escape \" ` $ or \\: \(exec)")
                        }
                        index += 1
                        quoted.append(text[index])
                    } else if inner == "%" {
                        guard index + 1 < text.count, text[index + 1] == "%" else {
                            throw Malformed(description: "a field code inside quotes: \(exec)")
                        }
                        index += 1
                        quoted.append("%")
                    } else {
                        quoted.append(inner)
                    }
                    index += 1
                }
                word = quoted
            case "%":
                guard index + 1 < text.count else { throw Malformed(description: "a lone % ends \(exec)") }
                index += 1
                switch text[index] {
                case "%": word = (word ?? "") + "%"
                case "u":
                    let startsWord = word == nil
                    let endsWord = index + 1 == text.count || text[index + 1] == " "
                    guard startsWord && endsWord else { throw Malformed(description: "%u is not a word of its own: \(exec)") }
                    word = url
                default: throw Malformed(description: "unexpected field code %\(text[index]) in \(exec)")
                }
            case "\\", "'", ">", "<", "~", "|", "&", ";", "$", "*", "?", "#", "(", ")", "`":
                throw Malformed(description: "reserved character \(character) outside quotes in \(exec)")
            default:
                word = (word ?? "") + String(character)
            }
            index += 1
        }
        if let finished = word { words.append(finished) }
        return words
    }
}

/// The path of an executable on the test runner's `$PATH`, or nil.
func executableOnPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") where access("\(directory)/\(name)", X_OK) == 0 {
        return "\(directory)/\(name)"
    }
    return nil
}

/// A path with its symbolic links resolved (what /proc/self/exe reports).
func canonicalPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}
