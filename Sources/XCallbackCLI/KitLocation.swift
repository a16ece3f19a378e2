import CSDKHeader

#if canImport(Glibc)
import Glibc
#endif

/// Where the plug-in kits are: a folder laid out as this repository's
/// `bindings/`, with the Swift kit's package in `swift/` and the Rust crate
/// in `rust/xcallback/`. `new` points projects there; `sdk --kit` prints it.
///
/// Looked for in this order: `--kit` (a checkout, or such a folder); the
/// checkout this binary was built from; else the copy the binary carries,
/// written to `$XDG_DATA_HOME/xcallback/bindings` (and rewritten wherever it
/// differs from this binary's), so an installed or copied binary makes
/// projects that build offline. Never a URL: none is published yet.
enum KitLocation {
    /// The kits' folder, writing the carried copy when no other is found.
    static func folderOrUserCopy(kit explicit: String? = nil) throws -> String {
        if let explicit { return try folder(named: explicit) }
        if let checkout = SDKLocation.checkout(), isKitFolder(checkout + "/bindings") { return checkout + "/bindings" }
        let data: XDGDirectories
        do { data = try XDGDirectories(environment: Environment.current) } catch {
            throw Failure.exit("cannot find the plug-in kits, and \(error); pass --kit PATH to an xcallback checkout")
        }
        let folder = data.dataHome + "/xcallback/bindings"
        do {
            try writeCarriedKit(to: folder)
        } catch {
            throw Failure.exit("cannot write the plug-in kits to \(folder): \(error); pass --kit PATH to an xcallback checkout")
        }
        return folder
    }

    /// Writes every file the binary carries under `folder`, leaving files
    /// that already hold the same bytes untouched (a project's build then
    /// sees nothing changed).
    static func writeCarriedKit(to folder: String) throws(TextFileError) {
        for file in carriedFiles { try TextFile.ensure(folder + "/" + file.path, holds: file.bytes) }
    }

    /// The kits' files this binary carries, by their path under `bindings/`.
    static var carriedFiles: [(path: String, bytes: [UInt8])] {
        let table = xcallback_sdk_kit_files()!
        return (0..<Int(xcallback_sdk_kit_file_count())).map { index in
            let file = table[index]
            return (String(cString: file.path), Array(UnsafeBufferPointer(start: file.bytes, count: Int(file.size))))
        }
    }

    /// `--kit PATH`: a checkout (its `bindings/`) or a kits' folder itself.
    private static func folder(named path: String) throws -> String {
        guard let resolved = realpath(path, nil) else { throw Failure.exit("--kit \(path): \(String(cString: strerror(errno)))") }
        defer { free(resolved) }
        let text = String(cString: resolved)
        if isKitFolder(text + "/bindings") { return text + "/bindings" }
        if isKitFolder(text) { return text }
        throw Failure.exit("--kit \(path): neither an xcallback checkout nor a kits' folder (no swift/Package.swift and rust/xcallback/Cargo.toml)")
    }

    private static func isKitFolder(_ path: String) -> Bool {
        access(path + "/swift/Package.swift", R_OK) == 0 && access(path + "/rust/xcallback/Cargo.toml", R_OK) == 0
    }
}
