import ArgumentParser
import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

/// `xcallback new NAME --language c|swift|rust|wasm`: a plug-in project that
/// builds with the language's usual one command and passes `xcallback check`
/// at once, as `cargo new` and `swift package init` do.
struct NewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Make a new plug-in project: source, build file, sample requests and a README.",
        discussion: """
            The project is made in the folder NAME (it must not exist). It builds with `make` (C, and \
            C to WebAssembly with clang --target=wasm32), `swift build` (Swift) or `cargo build` (Rust), offline. Its Makefile and README call this \
            xcallback: `xcallback` when that is the one on PATH, else this binary's full path. Swift and Rust projects depend on \
            this xcallback's kit by path: the checkout this binary was built from, when it can find \
            one, else the copy the binary carries, written to $XDG_DATA_HOME/xcallback/bindings \
            (`xcallback sdk --kit`); --kit names a checkout or such a folder instead.
            """)

    @Argument(help: "The plug-in's name: its folder, library, scheme and plug-in name (a-z, 0-9, _; starting with a letter).")
    var name: String

    @Option(help: "c, swift, rust or wasm (C built into NAME.wasm, docs/wasm.md).")
    var language: TemplateLanguage = .c

    @Option(help: ArgumentHelp("An xcallback checkout, or a kits' folder (`sdk --kit`), to take the kit from (Swift, Rust).", valueName: "path"),
            completion: .directory)
    var kit: String?

    func validate() throws {
        guard let first = name.utf8.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z"), name.utf8.count <= 64,
              name.utf8.allSatisfy({ ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_") })
        else {
            throw ValidationError("'\(name)' is not a plug-in name: use a-z, 0-9 and _, starting with a letter (at most 64)")
        }
        #if !Wasm
        if language == .wasm { throw ValidationError(WasmTrait.missing) }
        #endif
    }

    func run() throws {
        var status = stat()
        guard lstat(name, &status) != 0 else { throw Failure.exit("\(name) already exists; choose another name or remove it") }
        // C needs only the header, which `make` finds through `xcallback sdk`
        // (`sdk --wasm` writes the wasm ABI's).
        let kits = language == .c || language == .wasm ? nil : try KitLocation.folderOrUserCopy(kit: kit)
        let binary = NewProjectBinary()
        var template = PluginTemplate(name: name, language: language, kits: kits)
        (template.binary, template.binaryForMake) = (binary.command, binary.makeValue)
        let files = template.files
        guard mkdir(name, 0o755) == 0 else { throw Failure.exit("cannot make \(name): \(String(cString: strerror(errno)))") }
        for file in files {
            let path = name + "/" + file.path
            if let slash = path.lastIndex(of: "/") { try Self.makeFolders(String(path[..<slash])) }
            do {
                try TextFile.replace(path, with: Array(file.text.utf8))
            } catch {
                throw Failure.exit("\(error)")
            }
        }
        print("made \(name)/ (\(language.rawValue)): \(files.map(\.path).joined(separator: ", "))")
        print("next: cd \(name) && \(language.buildCommand) && \(binary.command) check \(language.libraryPath(name))")
    }

    private static func makeFolders(_ path: String) throws {
        var built = ""
        for part in path.split(separator: "/") {
            built += built.isEmpty && !path.hasPrefix("/") ? String(part) : "/" + part
            if mkdir(built, 0o755) != 0 && errno != EEXIST {
                throw Failure.exit("cannot make \(built): \(String(cString: strerror(errno)))")
            }
        }
    }
}

enum TemplateLanguage: String, ExpressibleByArgument, CaseIterable {
    case c, swift, rust, wasm

    var buildCommand: String {
        switch self {
        case .c: "make"
        case .swift: "swift build"
        case .rust: "cargo build"
        case .wasm: "make"
        }
    }

    func libraryPath(_ name: String) -> String {
        switch self {
        case .c: "lib\(name).so"
        case .swift: ".build/debug/lib\(name).so"
        case .rust: "target/debug/lib\(name).so"
        case .wasm: "\(name).wasm"
        }
    }
}
