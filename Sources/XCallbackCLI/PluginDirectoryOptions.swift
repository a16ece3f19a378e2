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
        valueName: "dir"), completion: .directory)
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

package enum Environment {
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
    package static var executable: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return count > 0 ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }

    /// Where the default FIFO and socket live: `$XDG_RUNTIME_DIR`, else a
    /// folder of our own in /tmp, made on first use, as tmux and ssh-agent
    /// do. Either must be private (ours, not a symlink, closed to group and
    /// others): in a shared folder another user could put his own FIFO or
    /// socket at the path, read our requests and answer them.
    static func runtimeDirectory() throws -> String {
        let directory: String
        if let runtime = current["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            directory = runtime
        } else {
            directory = "/tmp/xcallback-\(getuid())"
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw Failure.exit("cannot create \(directory): \(String(cString: strerror(errno)))")
            }
        }
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw Failure.exit("cannot use \(directory): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
            throw Failure.exit("\(directory) is not a private folder (it must be a directory of uid \(getuid()), "
                + "not a symlink, mode 0700; it is \(whatItIs(directory, info))): "
                + "remove it, or name the FIFO or socket explicitly")
        }
        return directory
    }

    /// What the runtime folder is instead of a private directory, the
    /// failing point first: a symlink (and where to), another kind of
    /// file, or a directory of another user or open to others.
    private static func whatItIs(_ path: String, _ info: stat) -> String {
        let mode = "mode 0" + String(info.st_mode & 0o7777, radix: 8)
        switch info.st_mode & S_IFMT {
        case S_IFLNK:
            var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink(path, &target, target.count - 1)
            let to = count > 0 ? " to " + String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
            return "a symlink\(to), owned by uid \(info.st_uid)"
        case S_IFDIR:
            return "a directory owned by uid \(info.st_uid), \(mode)"
        case S_IFREG:
            return "a regular file, owned by uid \(info.st_uid), \(mode)"
        default:
            return "not a directory (a special file), owned by uid \(info.st_uid), \(mode)"
        }
    }

    static func defaultFIFO() throws -> String { try runtimeDirectory() + "/xcallback-\(getuid()).fifo" }
    static func defaultSocket() throws -> String { try runtimeDirectory() + "/xcallback-\(getuid()).sock" }
}
