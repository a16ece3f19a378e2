import CXCallback
import Logging
import XCallbackRouting
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a plug-in says about itself, read from its descriptor.
public struct PluginInfo: Sendable, Equatable {
    public var path: String
    public var name: String
    public var version: String
    public var summary: String
    public var abiMajor: Int
    public var abiMinor: Int

    public init(path: String, name: String, version: String, summary: String, abiMajor: Int, abiMinor: Int) {
        self.path = path
        self.name = name
        self.version = version
        self.summary = summary
        self.abiMajor = abiMajor
        self.abiMinor = abiMinor
    }
}

/// A plug-in loaded into this process: its identity and the handlers it
/// registered. Never unloaded (`dlclose` is unsafe for Swift code and for
/// any plug-in with threads still running); reloading means a new process.
public final class LoadedPlugin: Sendable {
    public let info: PluginInfo
    public let handle: PluginHandle
    public let registrations: [Registration]
    private let shutdownFunction: xcallback_shutdown_function?
    /// Names this plug-in in the crash line of a host it takes down.
    public let mark: PluginMark

    public init(info: PluginInfo, handle: PluginHandle, registrations: [Registration],
         shutdown: xcallback_shutdown_function?) {
        self.info = info
        self.handle = handle
        self.registrations = registrations
        self.shutdownFunction = shutdown
        mark = CrashReport.mark(for: info.name)
    }

    public var name: String { info.name }
    /// Routes refused because another plug-in owns one of the same shape.
    public var refusedRoutes: [RefusedRoute] { handle.refused }
    public var routes: [RoutePattern] { registrations.map(\.pattern) }
    /// For each route (in the order of ``routes``), the C declaration of
    /// its bound function, or nil for a C handler.
    public var signatures: [CDeclaration?] { registrations.map { $0.handler.boundFunction?.declaration } }

    /// Calls the plug-in's optional shutdown hook.
    public func shutdown() {
        shutdownFunction?(handle.opaque)
    }
}

/// Loads plug-in files into this process.
public struct PluginLoader: Sendable {
    public var logger: Logger

    /// The checks every file loaded must pass first (`--allow-insecure-plugins` relaxes them).
    public let security: FileSecurity

    public init(logger: Logger, security: FileSecurity = FileSecurity()) {
        self.logger = logger
        self.security = security
    }

    /// Why a route was refused, given the owner the conflict check named.
    public static func refusal(of pattern: RoutePattern, owner: String) -> String {
        pattern.scheme == HostScheme.name
            ? "the scheme '\(HostScheme.name)' is reserved for the host's built-in routes"
            : "plug-in '\(owner)' already owns a route of the same shape"
    }

    /// Opens `path`, validates its descriptor, and runs its registration;
    /// or, for a binding manifest (`.xcallback.toml`), binds the functions it
    /// declares (see ``loadManifest(_:conflictOwner:)``); or, for a file of
    /// an installed format (`.wasm`), hands it to that format once checked.
    /// `conflictOwner` answers whether another plug-in owns a route of the
    /// same shape (the existing owner keeps it). Routes on the host's own
    /// scheme are refused whoever loads the file (host, worker, probe).
    /// Loads `path`, opened and checked here, or from `descriptor` when a
    /// parent process already opened and checked it (workers, probes).
    public func load(
        _ path: String,
        from descriptor: Int32? = nil,
        conflictOwner otherOwner: @escaping @Sendable (RoutePattern) -> String? = { _ in nil }
    ) throws(PluginLoadError) -> LoadedPlugin {
        let conflictOwner: @Sendable (RoutePattern) -> String? = { pattern in
            pattern.scheme == HostScheme.name ? HostScheme.name : otherOwner(pattern)
        }
        let pluginFile: PluginFile
        if let descriptor {
            pluginFile = .inherited(descriptor, path: path)
        } else {
            pluginFile = try .open(path, security: security)
        }
        if path.hasSuffix(BindingManifest.suffix) {
            defer { pluginFile.close() }
            return try loadManifest(path, from: pluginFile, conflictOwner: conflictOwner)
        }
        if let format = PluginFormats.format(for: path) {
            return try format.load(pluginFile, path: path, logger: logger, security: security, conflictOwner: conflictOwner)
        }
        // RTLD_NOW: an unresolved symbol fails here, not mid-request.
        // RTLD_LOCAL: plug-ins cannot see (or clash with) each other's symbols.
        // Never RTLD_DEEPBIND: it breaks the shared Swift runtime and libc.
        if let problem = SharedLibraryFile.problem(loading: pluginFile) {
            pluginFile.close()
            throw PluginLoadError(path: path, reason: .cannotOpen(problem))
        }
        // A worker or probe loads once and keeps its inherited descriptor.
        let (loaded, file) = pluginFile.load(flags: RTLD_NOW | RTLD_LOCAL, keepsDescriptor: descriptor != nil)
        guard let library = loaded else {
            // dlerror names the file we passed (/proc/self/fd/N); the error names the path.
            let message = Self.dlerrorMessage()
            let detail = message.hasPrefix(file + ": ") ? String(message.dropFirst(file.count + 2)) : message
            throw PluginLoadError(path: path, reason: .cannotOpen(detail))
        }
        let info = try Self.readDescriptor(library, path: path)
        guard let registerSymbol = dlsym(library, XCALLBACK_REGISTER_SYMBOL) else {
            throw PluginLoadError(path: path, reason: .missingRegister)
        }
        let register = unsafeBitCast(registerSymbol, to: xcallback_register_function.self)
        let shutdown = dlsym(library, XCALLBACK_SHUTDOWN_SYMBOL).map {
            unsafeBitCast($0, to: xcallback_shutdown_function.self)
        }

        let handle = PluginHandle(name: info.name, logger: logger, conflictOwner: conflictOwner).retainForever()
        handle.beginRegistration()
        let status = register(HostAPI.table, handle.opaque)
        handle.endRegistration()
        guard status == XCALLBACK_OK else {
            throw PluginLoadError(path: path, reason: .registrationFailed(status: status))
        }
        return LoadedPlugin(info: info, handle: handle, registrations: handle.registrations, shutdown: shutdown)
    }

    /// Reads and checks the descriptor before anything else in the plug-in runs.
    public static func readDescriptor(_ library: UnsafeMutableRawPointer, path: String) throws(PluginLoadError) -> PluginInfo {
        guard let symbol = dlsym(library, XCALLBACK_DESCRIPTOR_SYMBOL) else {
            throw PluginLoadError(path: path, reason: .notAPlugin)
        }
        let describe = unsafeBitCast(symbol, to: xcallback_descriptor_function.self)
        guard let descriptor = describe() else {
            throw PluginLoadError(path: path, reason: .badDescriptor(field: "descriptor", problem: "is NULL"))
        }
        func bad(_ field: String, _ problem: String) -> PluginLoadError {
            PluginLoadError(path: path, reason: .badDescriptor(field: field, problem: problem))
        }
        let magic = descriptor.pointee.magic
        guard magic == XCALLBACK_ABI_MAGIC else {
            throw bad("magic", "is 0x\(String(magic, radix: 16)), expected 0x\(String(XCALLBACK_ABI_MAGIC, radix: 16)) (XCALLBACK_ABI_MAGIC)")
        }
        let major = Int(descriptor.pointee.abi_major)
        let minor = Int(descriptor.pointee.abi_minor)
        guard major == Int(XCALLBACK_ABI_MAJOR) else {
            throw bad("abi_major", "is \(major), but this host speaks ABI major \(XCALLBACK_ABI_MAJOR); rebuild the plug-in against this host's xcallback.h")
        }
        guard minor <= Int(XCALLBACK_ABI_MINOR) else {
            throw bad("abi_minor", "is \(minor), newer than this host's ABI \(XCALLBACK_ABI_MAJOR).\(XCALLBACK_ABI_MINOR); upgrade xcallback")
        }
        let size = Int(descriptor.pointee.descriptor_size)
        let layoutHint = "the plug-in was built against a header or binding that does not match xcallback.h \(major).\(minor) (compare its structs with `xcallback sdk --layout`)"
        guard size >= MemoryLayout<xcallback_descriptor>.size else {
            throw bad("descriptor_size", "is \(size), smaller than the \(MemoryLayout<xcallback_descriptor>.size) bytes of an ABI \(major).\(minor) descriptor: \(layoutHint)")
        }
        let statedAPISize = Int(descriptor.pointee.host_api_size)
        if minor < 2 {
            guard statedAPISize == 0 else {
                throw bad("host_api_size", "is \(statedAPISize) in an ABI \(major).\(minor) descriptor, where the field is `flags`, reserved, and must be 0")
            }
        } else if statedAPISize != 0, statedAPISize != HostAPI.size(forMinor: minor) {
            throw bad("host_api_size", "is \(statedAPISize), but ABI \(major).\(minor)'s xcallback_host_api is \(HostAPI.size(forMinor: minor)) bytes: \(layoutHint)")
        }
        guard let namePointer = descriptor.pointee.name else {
            throw bad("name", "is NULL")
        }
        let name = String(cString: namePointer)
        guard Self.isValidName(name) else {
            throw bad("name", "is \"\(name)\"; use 1-64 characters of A-Z a-z 0-9 . _ -")
        }
        return PluginInfo(
            path: path,
            name: name,
            version: descriptor.pointee.version.map { String(cString: $0) } ?? "",
            summary: descriptor.pointee.description.map { String(cString: $0) } ?? "",
            abiMajor: major,
            abiMinor: minor)
    }

    /// What is wrong with an identity a process that ran a plug-in's code
    /// reported (a worker's handshake, a probe's report), if anything: the
    /// name must be one the loader accepts, and the rest of bounded size.
    public static func reportedIdentityProblem(name: String, version: String, summary: String) -> String? {
        guard isValidName(name) else {
            return "named the plug-in '\(PrintableText.escaping(String(name.prefix(64))))', which is not a plug-in name"
        }
        guard version.utf8.count <= 256, summary.utf8.count <= 1024 else {
            return "gave a version or summary longer than 256 or 1,024 bytes"
        }
        return nil
    }

    public static func isValidName(_ name: String) -> Bool {
        let utf8 = name.utf8
        return (1...64).contains(utf8.count) && utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }

    private static func dlerrorMessage() -> String {
        dlerror().map { String(cString: $0) } ?? "unknown dlopen error"
    }
}
