import ArgumentParser
import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

/// `--plugins DIR` (repeatable) and the insecure-file opt-out, shared by
/// every command that scans plug-in directories.
struct PluginDirectoryOptions: ParsableArguments {
    @Option(name: .customLong("plugins"), help: ArgumentHelp(
        "A plug-in directory (repeatable). Default: $XCALLBACK_PLUGIN_PATH, else ~/.local/share/xcallback/plugins, /usr/local/lib/xcallback/plugins, /usr/lib/xcallback/plugins.",
        valueName: "dir"))
    var directories: [String] = []

    @Flag(name: .customLong("allow-insecure-plugins"),
          help: "Load plug-in files and directories even when group/other-writable or owned by another user.")
    var allowInsecure = false

    /// Whether the directories were named on the command line (then a bad
    /// one is an error; the defaults may simply not exist).
    var areExplicit: Bool { !directories.isEmpty }

    var resolved: [String] {
        directories.isEmpty ? HostConfiguration.defaultPluginDirectories(environment: Environment.current) : directories
    }
}

enum Environment {
    static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }

    /// The running executable, for starting probe children.
    static var executable: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return count > 0 ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }

    static var runtimeDirectory: String {
        if let directory = current["XDG_RUNTIME_DIR"], !directory.isEmpty { return directory }
        return "/tmp"
    }

    static var defaultFIFO: String { runtimeDirectory + "/xcallback-\(getuid()).fifo" }
    static var defaultSocket: String { runtimeDirectory + "/xcallback-\(getuid()).sock" }
}
