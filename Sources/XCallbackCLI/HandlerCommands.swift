import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

struct InstallHandlerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install-handler",
        abstract: "Make xcallback the desktop's handler for URL schemes, so xdg-open and browsers send their URLs to a running host.",
        discussion: """
            For each scheme, writes the desktop entry xcallback-SCHEME.desktop to \
            $XDG_DATA_HOME/applications (default ~/.local/share/applications). It runs this \
            xcallback binary, by its absolute path, as `xcallback send [--fifo PATH] -- URL`, so a \
            host started with `xcallback run --fifo` receives the URL. Then, when xdg-mime is on \
            PATH, `xdg-mime default` makes the entry the default handler of x-scheme-handler/SCHEME \
            (update-desktop-database also runs when present). Without xdg-mime the entry is still \
            written, the line to add to $XDG_CONFIG_HOME/mimeapps.list by hand is printed, and the \
            exit status is 0.
            """)

    @Option(help: ArgumentHelp(
        "The FIFO the handler writes to (default: the one `xcallback send` uses when it runs, $XDG_RUNTIME_DIR/xcallback-UID.fifo).",
        valueName: "path"))
    var fifo: String?

    @Argument(help: ArgumentHelp("URL schemes to handle, such as calc.", valueName: "scheme"))
    var schemes: [String]

    func validate() throws {
        if schemes.isEmpty { throw ValidationError("give at least one scheme, such as calc") }
        do {
            for scheme in schemes { _ = try HandlerScheme(validating: scheme) }
        } catch { throw ValidationError(error.description) }
        if let fifo, fifo.isEmpty { throw ValidationError("--fifo needs a path") }
    }

    func run() throws {
        let environment = Environment.current
        let directories = try orFail { () throws(XDGDirectoryError) in try XDGDirectories(environment: environment) }
        let handlers = try uniqueSchemes(schemes).map { SchemeHandlerFile(scheme: $0, directories: directories) }
        let executable = Environment.executable
        let fifoPath = fifo.map(Self.absolute)

        try orFail { () throws(TextFileError) in try TextFile.makeDirectories(directories.applications) }
        for handler in handlers {
            if let owner = try orFail({ () throws(TextFileError) in try handler.existingOwner() }), owner != .xcallback {
                throw Failure.exit("\(handler.path) exists and was not written by xcallback; left it alone (remove it to install)")
            }
            let entry = handler.entry(executable: executable, fifo: fifoPath)
            try orFail { () throws(TextFileError) in try TextFile.replace(handler.path, with: Array(entry.rendered.utf8)) }
            print("wrote \(handler.path)")
        }

        // Refreshes the MIME cache of the directory; desktops that read the
        // entries directly do not need it, so its absence is fine.
        if let updater = ExternalTool.find("update-desktop-database", environment: environment) {
            do { try updater.run([directories.applications]) } catch { warn("\(error) (the entries are written; continuing)") }
        }

        guard let xdgMime = ExternalTool.find("xdg-mime", environment: environment) else {
            let lines = handlers.map { "  " + MimeAppsList.defaultLine(desktopID: $0.scheme.desktopFileID, mimeType: $0.scheme.mimeType) }
            warn("""
                xdg-mime is not on PATH (Debian/Ubuntu: apt install xdg-utils), so the handler is \
                installed but not made the default. To make it the default, add under \
                [Default Applications] in \(directories.mimeAppsList):
                \(lines.joined(separator: "\n"))
                """)
            printHostHint(fifoPath)
            return
        }
        for handler in handlers {
            let arguments = ["default", handler.scheme.desktopFileID, handler.scheme.mimeType]
            do { try xdgMime.run(arguments) } catch {
                throw Failure.exit("\(error); \(handler.path) is written but not the default handler of \(handler.scheme.mimeType)")
            }
            print("made \(handler.scheme.desktopFileID) the default handler of \(handler.scheme.mimeType)")
        }
        printHostHint(fifoPath)
    }

    private func printHostHint(_ fifo: String?) {
        let path = fifo ?? (try? Environment.defaultFIFO()) ?? "$XDG_RUNTIME_DIR/xcallback-\(getuid()).fifo"
        print("URLs go to the host reading \(path); start one with: xcallback run --fifo \(ShellWord.quoted(path))")
    }

    /// A launcher runs the entry from some other directory.
    private static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        guard let directory = getcwd(nil, 0) else { return path }
        defer { free(directory) }
        return String(cString: directory) + "/" + path
    }
}

struct UninstallHandlerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall-handler",
        abstract: "Remove what install-handler set up for URL schemes.",
        discussion: """
            For each scheme, removes xcallback-SCHEME.desktop from $XDG_DATA_HOME/applications and \
            takes it out of the x-scheme-handler/SCHEME lines of $XDG_CONFIG_HOME/mimeapps.list; \
            every other line of that file stays as it was. Says so when there was nothing to remove \
            (exit status 0). A desktop file of that name that xcallback did not write is left alone \
            (exit status 1).
            """)

    @Argument(help: ArgumentHelp("URL schemes, such as calc.", valueName: "scheme"))
    var schemes: [String]

    func validate() throws {
        if schemes.isEmpty { throw ValidationError("give at least one scheme, such as calc") }
        do {
            for scheme in schemes { _ = try HandlerScheme(validating: scheme, allowReserved: true) }
        } catch { throw ValidationError(error.description) }
    }

    func run() throws {
        let environment = Environment.current
        let directories = try orFail { () throws(XDGDirectoryError) in try XDGDirectories(environment: environment) }
        var refused: [String] = []
        var removedAny = false
        for scheme in try uniqueSchemes(schemes, allowReserved: true) {
            let handler = SchemeHandlerFile(scheme: scheme, directories: directories)
            var removed: [String] = []
            switch try orFail({ () throws(TextFileError) in try handler.existingOwner() }) {
            case .xcallback?:
                guard unlink(handler.path) == 0 || errno == ENOENT else {
                    throw Failure.exit("cannot remove \(handler.path): \(String(cString: strerror(errno)))")
                }
                removed.append("removed \(handler.path)")
            case .someoneElse?:
                // Its associations are not ours either.
                refused.append(handler.path)
                continue
            case nil:
                break
            }
            for list in directories.mimeAppsLists {
                guard let text = try orFail({ () throws(TextFileError) in try TextFile.read(list) }),
                      let edited = MimeAppsList.removing(scheme.desktopFileID, for: scheme.mimeType, from: text)
                else { continue }
                try orFail { () throws(TextFileError) in try TextFile.replace(list, with: edited) }
                removed.append("removed the \(scheme.mimeType) association from \(list)")
            }
            if removed.isEmpty {
                print("nothing to remove for \(scheme): no \(handler.path) and no association in \(directories.mimeAppsList)")
            }
            removed.forEach { print($0) }
            removedAny = removedAny || !removed.isEmpty
        }
        if removedAny, let updater = ExternalTool.find("update-desktop-database", environment: environment) {
            do { try updater.run([directories.applications]) } catch { warn("\(error) (continuing)") }
        }
        if !refused.isEmpty {
            throw Failure.exit("not written by xcallback, so left alone: \(refused.joined(separator: ", "))")
        }
    }
}

/// The desktop entry of one scheme's handler, in the user's applications directory.
struct SchemeHandlerFile {
    /// Who wrote an existing file.
    enum Owner { case xcallback, someoneElse }

    /// Marks the entries xcallback wrote, so uninstall never removes another program's file.
    static let markerKey = "X-XCallback-Scheme"

    let scheme: HandlerScheme
    let path: String

    init(scheme: HandlerScheme, directories: XDGDirectories) {
        self.scheme = scheme
        path = directories.applications + "/" + scheme.desktopFileID
    }

    /// Nil when there is no file.
    func existingOwner() throws(TextFileError) -> Owner? {
        guard let bytes = try TextFile.read(path) else { return nil }
        let marker = "\(Self.markerKey)=\(scheme.name)"
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
        return lines.contains { $0 == marker } ? .xcallback : .someoneElse
    }

    /// `xcallback send [--fifo PATH] -- %u`: `--` so that no URL is ever read as an option.
    func entry(executable: String, fifo: String?) -> DesktopEntry {
        var exec: [DesktopEntry.ExecArgument] = [.literal(executable), .literal("send")]
        if let fifo { exec += [.literal("--fifo"), .literal(fifo)] }
        exec += [.literal("--"), .fieldCode("u")]
        return DesktopEntry(
            name: "xcallback (\(scheme.name):)",
            comment: "Send \(scheme.name): URLs to a running xcallback host",
            exec: exec,
            tryExec: executable,
            mimeTypes: [scheme.mimeType],
            extensionKeys: [(Self.markerKey, scheme.name)])
    }
}

/// Validated schemes, each once, in the order given.
private func uniqueSchemes(_ names: [String], allowReserved: Bool = false) throws -> [HandlerScheme] {
    var seen = Set<HandlerScheme>()
    var result: [HandlerScheme] = []
    for name in names {
        let scheme: HandlerScheme
        do { scheme = try HandlerScheme(validating: name, allowReserved: allowReserved) } catch { throw Failure.exit(error.description) }
        if seen.insert(scheme).inserted { result.append(scheme) }
    }
    return result
}

/// Runs `body`; its typed error becomes a one-line failure.
private func orFail<T, E: Error & CustomStringConvertible>(_ body: () throws(E) -> T) throws -> T {
    do { return try body() } catch { throw Failure.exit(error.description) }
}

/// A warning on stderr that does not end the command.
private func warn(_ message: String) {
    let line = Array("xcallback: \(message)\n".utf8)
    _ = write(2, line, line.count)
}
