import TOMLKit

/// A capability file could not be used: the message names the file, the
/// key and what was wrong, for the operator or plug-in author to fix.
public struct CapabilityFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The capability keys, shared by a plug-in's declaration (`NAME.caps.toml`)
/// and the operator's grants (`--sandbox-config`): see docs/plugin-guide.md,
/// "Declaring capabilities".
///
/// ```toml
/// network = true
/// exec = true
/// ipc = true
/// memory = 256        # MiB
/// open_files = 512
/// processes = 4
/// scratch = 16        # MiB
/// environment = ["WEATHER_API_KEY"]
/// [files]
/// read = ["/usr/share/dict"]
/// write = ["/var/lib/myplugin"]
/// ```
enum CapabilityKeys {
    static let top = ["network", "exec", "ipc", "memory", "open_files", "processes", "scratch", "environment", "files"]
    static let files = ["read", "write"]
    /// Past these a number is a typo, not a plan.
    static let maxMemoryMiB = 1 << 20
    static let maxOpenFiles = 1 << 20
    static let maxProcesses = 1 << 16
    static let maxScratchMiB = 1 << 20

    /// Reads the keys present in `table` into a ceiling (absent: nil).
    static func ceiling(from table: TOMLTable, in file: String) throws(CapabilityFileError) -> CapabilityCeiling {
        try refuseUnknown(in: table, allowed: top, context: file)
        var ceiling = CapabilityCeiling()
        ceiling.network = try bool("network", in: table, file: file)
        ceiling.exec = try bool("exec", in: table, file: file)
        ceiling.ipc = try bool("ipc", in: table, file: file)
        ceiling.memoryMiB = try number("memory", in: table, file: file, max: maxMemoryMiB, min: 16)
        ceiling.openFiles = try number("open_files", in: table, file: file, max: maxOpenFiles, min: 16)
        ceiling.processes = try number("processes", in: table, file: file, max: maxProcesses, min: 0)
        ceiling.scratchMiB = try number("scratch", in: table, file: file, max: maxScratchMiB, min: 1)
        ceiling.environment = try names("environment", in: table, file: file)
        if let value = table["files"] {
            guard let files = value.table else { throw CapabilityFileError("\(file): 'files' must be a table ([files])") }
            try refuseUnknown(in: files, allowed: Self.files, context: "\(file) [files]")
            ceiling.filesRead = try paths("read", in: files, file: file)
            ceiling.filesWrite = try paths("write", in: files, file: file)
        }
        return ceiling
    }

    static func parse(_ text: String, file: String) throws(CapabilityFileError) -> TOMLTable {
        do {
            return try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw CapabilityFileError("\(file): invalid TOML at line \(error.source.begin.line): \(error.description)")
        } catch {
            throw CapabilityFileError("\(file): invalid TOML: \(error)")
        }
    }

    private static func refuseUnknown(in table: TOMLTable, allowed: [String], context: String) throws(CapabilityFileError) {
        for key in table.keys where !allowed.contains(key) {
            throw CapabilityFileError("\(context): unknown key '\(key)' (known: \(allowed.joined(separator: ", ")))")
        }
    }

    private static func bool(_ key: String, in table: TOMLTable, file: String) throws(CapabilityFileError) -> Bool? {
        guard let value = table[key] else { return nil }
        guard let bool = value.bool else { throw CapabilityFileError("\(file): '\(key)' must be true or false") }
        return bool
    }

    private static func number(_ key: String, in table: TOMLTable, file: String, max: Int, min: Int) throws(CapabilityFileError) -> Int? {
        guard let value = table[key] else { return nil }
        guard let number = value.int, number >= min, number <= max else {
            throw CapabilityFileError("\(file): '\(key)' must be a whole number from \(min) to \(max)")
        }
        return number
    }

    private static func names(_ key: String, in table: TOMLTable, file: String) throws(CapabilityFileError) -> [String]? {
        guard let value = table[key] else { return nil }
        guard let array = value.array else { throw CapabilityFileError("\(file): '\(key)' must be a list of variable names") }
        var result: [String] = []
        for element in array {
            guard let name = element.string, !name.isEmpty, !name.contains("="), !name.contains("\0") else {
                throw CapabilityFileError("\(file): '\(key)' holds \(element.debugDescription): each entry must be a variable name")
            }
            result.append(name)
        }
        return result
    }

    private static func paths(_ key: String, in table: TOMLTable, file: String) throws(CapabilityFileError) -> [String]? {
        guard let value = table[key] else { return nil }
        guard let array = value.array else { throw CapabilityFileError("\(file): 'files.\(key)' must be a list of paths") }
        var result: [String] = []
        for element in array {
            // Taken as written: no '.' or '..' (the operator's ceiling is
            // checked on the text), and no symlink on the way either (the
            // worker's file view refuses one).
            guard let path = element.string, path.hasPrefix("/"), !path.contains("\0"),
                  !path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
                      .contains(where: { $0 == ".." || $0 == "." || ($0.isEmpty && !path.hasSuffix("/")) }) else {
                throw CapabilityFileError("\(file): 'files.\(key)' holds \(element.debugDescription): each entry must be an absolute path without '.' or '..'")
            }
            result.append(path)
        }
        return result
    }
}

/// A plug-in's declaration: the sidecar `NAME.caps.toml` beside its file.
public enum CapabilityDeclaration {
    /// The sidecar's path for plug-in file `path`: its name without
    /// `.so`/`.xcallback.toml`/`.wasm` (and any version after `.so`), plus `.caps.toml`.
    public static func sidecarPath(for path: String) -> String {
        "\(path.dropLast(suffixLength(of: path)))" + ".caps.toml"
    }

    /// The file's name without its folder and the suffix `sidecarPath`
    /// drops: the key of its `[plugin.NAME]` section.
    public static func baseName(of path: String) -> String {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        return String(name.dropLast(suffixLength(of: name)))
    }

    private static func suffixLength(of path: String) -> Int {
        if path.hasSuffix(".xcallback.toml") { return ".xcallback.toml".count }
        if path.hasSuffix(".wasm") { return ".wasm".count }
        // libfoo.so, libfoo.so.1, libfoo.so.1.2
        var tail = Substring(path)
        while let last = tail.last, last.isNumber || last == "." {
            tail = tail.dropLast()
            if tail.hasSuffix(".so") { break }
        }
        if tail.hasSuffix(".so") { return path.count - tail.count + 3 }
        return 0
    }

    /// The capabilities `text` declares; keys it leaves out keep their
    /// defaults.
    public static func parse(_ text: String, file: String) throws(CapabilityFileError) -> Capabilities {
        let ceiling = try CapabilityKeys.ceiling(from: CapabilityKeys.parse(text, file: file), in: file)
        var declared = Capabilities.default
        declared.network = ceiling.network ?? declared.network
        declared.exec = ceiling.exec ?? declared.exec
        declared.ipc = ceiling.ipc ?? declared.ipc
        declared.filesRead = ceiling.filesRead ?? []
        declared.filesWrite = ceiling.filesWrite ?? []
        declared.memoryMiB = ceiling.memoryMiB ?? declared.memoryMiB
        declared.openFiles = ceiling.openFiles ?? declared.openFiles
        declared.processes = ceiling.processes ?? declared.processes
        declared.scratchMiB = ceiling.scratchMiB ?? declared.scratchMiB
        declared.environment = ceiling.environment ?? []
        return declared
    }
}
