import ArgumentParser
import CSDKHeader
import XCallbackBridge
import XCallbackHost
import XCallbackURL
import XCallbackWasm

#if canImport(Glibc)
import Glibc
#endif

struct SendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Write URLs to a running host's FIFO, each in one atomic write.")

    @Option(help: ArgumentHelp("The host's FIFO (default: $XDG_RUNTIME_DIR/xcallback-UID.fifo).", valueName: "path"), completion: .file())
    var fifo: String?

    @Argument(help: ArgumentHelp("Request URLs; put -- before them when one may begin with -.", valueName: "url")) var urls: [String]

    func validate() throws {
        if urls.isEmpty { throw ValidationError("give at least one URL") }
        for url in urls {
            // One write of at most PIPE_BUF bytes is atomic: lines from
            // several writers never interleave.
            if url.utf8.count + 1 > Int(PIPE_BUF) {
                throw ValidationError("URL is \(url.utf8.count) bytes; a FIFO write is atomic only up to \(PIPE_BUF - 1) bytes plus the newline")
            }
            if url.utf8.contains(UInt8(ascii: "\n")) { throw ValidationError("a URL cannot contain a newline") }
        }
    }

    func run() throws {
        let path = try fifo ?? Environment.defaultFIFO()
        signal(SIGPIPE, SIG_IGN)
        // Non-blocking open fails with ENXIO when no host has the FIFO open.
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            // No reader, or no FIFO yet: either way no host is there, and
            // the next step is the same (`run --fifo` makes the FIFO).
            if errno == ENXIO { throw Failure.exit("no host is reading \(path) (start one with: xcallback run --fifo \(ShellWord.quoted(path)))") }
            if errno == ENOENT { throw Failure.exit("no host has made \(path) (start one with: xcallback run --fifo \(ShellWord.quoted(path)))") }
            throw Failure.exit("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        // Another user's FIFO would hand him our requests.
        if let problem = LocalPeer.problem(withFIFO: fd, path: path) { throw Failure.exit("refusing FIFO: \(problem)") }
        for url in urls {
            let line = Array((url + "\n").utf8)
            while true {
                let written = write(fd, line, line.count)
                if written == line.count { break }
                if written < 0 && (errno == EAGAIN || errno == EINTR) {
                    // The pipe is full: wait until the host has read some.
                    var pending = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&pending, 1, 1000)
                    continue
                }
                throw Failure.exit("writing to \(path): \(written < 0 ? String(cString: strerror(errno)) : "short write")")
            }
        }
    }
}

struct CallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Send one URL to a running host's socket and print its outcome record.",
        discussion: """
            Exits 0 on success, 1 on error, 2 on cancel, 3 when no host answers.

            With --via-open, URL goes to another program instead: `call` adds x-success, x-error and \
            x-cancel pointing back at the host (xcallback://x-callback-url/response?requestID=ID&responseType=...), \
            asks the host to wait for that response, runs --open's COMMAND with the URL, and prints the \
            response as the record. It then also exits 4 when no response comes within --timeout, and \
            5 when COMMAND cannot be started or exits non-zero before a response comes.
            """)

    @Option(help: ArgumentHelp("The host's socket (default: $XDG_RUNTIME_DIR/xcallback-UID.sock).", valueName: "path"), completion: .file())
    var socket: String?

    @Flag(name: .customLong("via-open"), help: "Send URL to another program through --open and print the response it calls back with.")
    var viaOpen = false

    @Option(help: ArgumentHelp("With --via-open: the program that opens URL, run with it as its only argument (no shell). Default: xdg-open.", valueName: "command"))
    var open: String?

    @Option(help: ArgumentHelp("With --via-open: seconds to wait for the response (default 300, at most 3600).", valueName: "seconds"))
    var timeout: Double?

    @Argument(help: "The request URL.") var url: String

    func validate() throws {
        // One request, one record: a newline would smuggle in a second
        // request whose outcome `call` never reads.
        if url.utf8.contains(UInt8(ascii: "\n")) || url.utf8.contains(UInt8(ascii: "\r")) {
            throw ValidationError("a URL cannot contain a line break")
        }
        guard viaOpen else {
            if open != nil || timeout != nil { throw ValidationError("--open and --timeout go with --via-open") }
            return
        }
        if let timeout, !(timeout > 0 && timeout <= Correlation.maxTimeoutSeconds) {
            throw ValidationError("--timeout must be a number of seconds above 0 and at most \(Int(Correlation.maxTimeoutSeconds))")
        }
        if let open, open.isEmpty { throw ValidationError("--open needs a command") }
        do {
            _ = try Correlation.request(url, answeringTo: RequestID.random())
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() throws {
        let path = try socket ?? Environment.defaultSocket()
        signal(SIGPIPE, SIG_IGN)
        if viaOpen {
            let call = ViaOpenCall(url: url, socketPath: path, command: open ?? "xdg-open",
                                   timeoutSeconds: timeout ?? Correlation.defaultTimeoutSeconds)
            try call.run()
            return
        }
        let connection = try HostConnection.open(path)
        guard connection.sendOnly(url) else {
            throw Failure.exit("sending to \(path): \(String(cString: strerror(errno)))", status: 3)
        }
        guard case .record(let record) = connection.waitForRecord(until: nil), !record.isEmpty else {
            throw Failure.exit("the host closed the connection without an outcome", status: 3)
        }
        try Self.finish(with: record, request: url)
    }

    /// Prints the record and exits as its outcome says: 0, 1 or 2.
    static func finish(with record: String, request: String) throws {
        print(record)
        switch RecordClassifier.kind(of: record, request: request) {
        case .success: return
        case .error: throw ExitCode(1)
        case .cancel: throw ExitCode(2)
        }
    }
}

/// Tells which outcome a record is, from either output format.
enum RecordClassifier {
    static func kind(of record: String, request: String) -> OutcomeKind {
        if record.hasPrefix("{") {
            if record.contains(#""outcome":"error""#) { return .error }
            if record.contains(#""outcome":"cancel""#) { return .cancel }
            return .success
        }
        if record == "cancel" || record.hasPrefix("cancel?") { return .cancel }
        if record.hasPrefix("error?") { return .error }
        if record == "success" || record.hasPrefix("success?") { return .success }
        // A callback URL: match it against the request's callbacks; an
        // error carries errorCode, which tells x-error from the others when
        // several callbacks share a URL.
        let parsed = try? RequestURL(parsing: request)
        let hasErrorCode = record.contains("errorCode=")
        if let error = parsed?.errorURL, record.hasPrefix(error), hasErrorCode { return .error }
        if let cancel = parsed?.cancelURL, record.hasPrefix(cancel), !hasErrorCode { return .cancel }
        if let success = parsed?.successURL, record.hasPrefix(success) { return .success }
        return hasErrorCode ? .error : .success
    }
}

struct SDKCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdk",
        abstract: "Print where xcallback.h is (for a plain C compiler), where the Swift and Rust kits are, the ABI's layout (for other languages), or the WebAssembly ABI's header.")

    @Flag(name: .customLong("include-dir"), help: "The directory holding xcallback.h.") var includeDirectory = false
    @Flag(help: "Compiler flags: -I<dir>.") var cflags = false
    @Flag(help: "The size and offset of every field of the ABI's structs, for bindings in other languages.")
    var layout = false
    @Flag(help: ArgumentHelp("The folder holding the Swift kit's package (swift/) and the Rust crate (rust/xcallback/), written from this binary's copy when no checkout is found.",
                             visibility: .default))
    var kit = false
    @Flag(help: "Print the C header of the WebAssembly plug-in ABI (docs/wasm.md), for clang --target=wasm32.")
    var wasm = false

    func run() throws {
        if wasm {
            #if Wasm
            print(WasmHeader.text, terminator: "")
            return
            #else
            throw Failure.exit(WasmTrait.missing)
            #endif
        }
        if kit {
            print(try KitLocation.folderOrUserCopy())
            return
        }
        if layout {
            print("# xcallback ABI \(ABILayout.version); sizes and offsets in bytes on this machine")
            for (type, size) in ABILayout.sizes { print("\(type) size \(size)") }
            for field in ABILayout.fields {
                print("\(field.type).\(field.name) offset \(field.offset) size \(field.size)")
            }
            return
        }
        let directory = try SDKLocation.includeDirectoryOrUserCopy()
        if cflags { print("-I\(directory)") } else { print(directory) }
    }
}

/// Where xcallback.h lives: `$XCALLBACK_SDK_INCLUDE`; beside an installed
/// binary (PREFIX/bin/xcallback → PREFIX/include/xcallback); for a build
/// from source, in the package the binary was built from; else the copy the
/// binary carries, written to the user's data folder, so a binary copied
/// anywhere can still build plug-ins.
enum SDKLocation {
    /// The include directory, writing the carried header to
    /// `$XDG_DATA_HOME/xcallback/include` when no other copy is found (and
    /// again whenever the copy there differs from this binary's).
    static func includeDirectoryOrUserCopy() throws -> String {
        if let directory = includeDirectory() { return directory }
        let data: XDGDirectories
        do { data = try XDGDirectories(environment: Environment.current) } catch {
            throw Failure.exit("cannot find xcallback.h, and \(error); set XCALLBACK_SDK_INCLUDE to a folder holding it")
        }
        let directory = data.dataHome + "/xcallback/include"
        let header = directory + "/xcallback.h"
        let carried = Array(UnsafeBufferPointer(start: xcallback_sdk_header(), count: Int(xcallback_sdk_header_size())))
        do {
            try TextFile.ensure(header, holds: carried)
        } catch {
            throw Failure.exit("cannot write xcallback.h to \(directory): \(error); "
                + "set XCALLBACK_SDK_INCLUDE to a folder holding it")
        }
        return directory
    }

    static func includeDirectory() -> String? {
        if let explicit = Environment.current["XCALLBACK_SDK_INCLUDE"] { return explicit }
        let executable = Environment.executable
        var directory = String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)])
        var candidates = [directory + "/../include/xcallback"]
        // .build/<triple>/<config>/xcallback → package root, a few levels up.
        for _ in 0..<5 {
            directory = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
            if directory.isEmpty { break }
            candidates.append(directory + "/bindings/swift/Sources/CXCallback/include")
        }
        for candidate in candidates where access(candidate + "/xcallback.h", R_OK) == 0 {
            return canonical(candidate)
        }
        return nil
    }

    /// The xcallback checkout this binary was built from, if it was built
    /// from one (for `new`'s default kit).
    static func checkout() -> String? {
        guard Environment.current["XCALLBACK_SDK_INCLUDE"] == nil, let include = includeDirectory(),
              include.hasSuffix("/bindings/swift/Sources/CXCallback/include") else { return nil }
        let root = String(include.dropLast("/bindings/swift/Sources/CXCallback/include".count))
        return access(root + "/Package.swift", R_OK) == 0 ? root : nil
    }

    private static func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
