import CHostSupport
import Logging
import XCallbackBridge
import XCallbackRouting
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Validates a plug-in file in a child process (as GStreamer's plug-in
/// scanner does): `dlopen` runs the plug-in's constructors, and a plug-in
/// that crashes there must not take `xcallback plugins` or `check` down.
///
/// The child is this same executable started as `xcallback __probe FILE`;
/// it answers on its stdout in a line format only this file reads.
public enum PluginProbe {
    /// The hidden subcommand name the child runs under.
    public static let subcommand = "__probe"

    /// Probes `path` with the executable at `executable`.
    /// The probe is killed, and the file refused, past this many seconds: a
    /// constructor or registration that never returns must not hang
    /// `xcallback check` or a rescan.
    public static let timeLimit: Int32 = 10

    /// With `sandboxing`, the child enters the sandbox a worker for the
    /// file would, before its constructors run.
    /// `taken` are the routes plug-ins loaded before it own (pattern,
    /// owner): registering one fails as it would in the host.
    /// What the plug-in prints while it loads is logged to `logger`, as a
    /// worker's is (`WorkerOutputRelay`).
    public static func probe(_ path: String, executable: String, allowInsecure: Bool,
                             sandboxing: WorkerSandboxing? = nil, taken: [QueryParameter] = [],
                             timeLimit: Int32 = PluginProbe.timeLimit, logger: Logger? = nil) -> PluginStatus {
        // The child loads the very file checked here.
        let file: PluginFile
        do {
            file = try PluginFile.open(path, security: FileSecurity(allowInsecure: allowInsecure))
        } catch {
            return PluginStatus(path: path, info: nil, routes: [], error: error)
        }
        defer { file.close() }
        let plan: SandboxPlan?
        do {
            plan = try sandboxing?.plan(forPluginAt: path, security: FileSecurity(allowInsecure: allowInsecure))
        } catch {
            return PluginStatus(path: path, info: nil, routes: [], error: error)
        }
        // Counted until it is reaped (every path below reaps it before it
        // returns): its scratch folder is not removed under it.
        var writer: ScratchWriter? = nil
        if plan != nil {
            guard let admitted = sandboxing?.admitScratchWriter() else {
                return failed(path, .other("its scratch folders are being removed; not probed"))
            }
            writer = admitted
        }
        defer { writer?.ended() }
        var output: [Int32] = [0, 0]
        guard xcallback_pipe_cloexec(&output) == 0 else {
            return failed(path, .other("pipe: \(String(cString: strerror(errno)))"))
        }
        // Its stderr is a pipe of its own too, never the caller's (a plug-in
        // could set O_NONBLOCK on that, or truncate it). Non-blocking on the
        // probe's side: past a pipe's worth, its prints are dropped rather
        // than stalling it, and the caller reads them once it has ended.
        var errors: [Int32] = [0, 0]
        guard xcallback_pipe_cloexec(&errors) == 0 else {
            close(output[0])
            close(output[1])
            return failed(path, .other("pipe: \(String(cString: strerror(errno)))"))
        }
        _ = fcntl(errors[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(errors[1], F_SETFL, O_NONBLOCK)
        defer {
            logPrinted(errors[0], by: path, to: logger)
            close(errors[0])
        }
        let arguments = [subcommand, path]
            + (allowInsecure ? [WorkerMain.allowInsecureFlag] : [])
            + (plan.map { [WorkerMain.sandboxOption, $0.encoded] } ?? [])
            + (taken.isEmpty ? [] : [takenOption, encode(taken)])
        let library = ChildDescriptors.Placement(descriptor: file.descriptor, number: WorkerMain.libraryDescriptor)
        let spawned = HostChild.spawn(executable, arguments: arguments, stdout: output[1], stderr: errors[1],
                                      placing: [library], sandbox: plan)
        close(output[1])
        close(errors[1])
        let pid: pid_t
        switch spawned {
        case .success(let child):
            pid = child
            let pidfd = xcallback_pidfd_open(child)
            writer?.started(pidfd: pidfd)
            if pidfd >= 0 { close(pidfd) }
        case .failure(let error):
            close(output[0])
            return failed(path, .other("cannot start the probe: \(error)"))
        }
        var tooLong = false
        let text = readAll(output[0], deadline: MonotonicClock.now + UInt64(timeLimit) * 1_000_000_000, tooLong: &tooLong)
        close(output[0])
        kill(-pid, SIGKILL)  // anything its constructors started
        guard let text else {
            _ = WorkerExit.wait(for: pid)
            if tooLong { return failed(path, .other("its probe wrote more than \(maxReportBytes) bytes of report; not a plug-in's")) }
            return failed(path, .other("did not finish loading within \(timeLimit) s (a constructor or registration that never returns?)"))
        }
        if let signal = WorkerExit.wait(for: pid).signal {
            return failed(path, .crashed("signal \(signal), \(signalName(signal))"))
        }
        return parse(text, path: path)
    }

    /// The child's side: load, report, exit.
    /// The option the routes taken by earlier plug-ins come in.
    public static let takenOption = "--taken"

    /// `pattern=owner&…`, each percent-encoded.
    static func encode(_ taken: [QueryParameter]) -> String {
        taken.map { PercentEncoding.encode($0.name) + "=" + PercentEncoding.encode($0.value) }.joined(separator: "&")
    }

    /// What `encode` wrote; nil for anything else.
    public static func decodeTaken(_ text: String) -> [QueryParameter]? {
        var taken: [QueryParameter] = []
        for item in text.split(separator: "&") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let pattern = try? PercentEncoding.decode(parts[0]),
                  let owner = try? PercentEncoding.decode(parts[1]) else { return nil }
            taken.append(QueryParameter(name: pattern, value: owner))
        }
        return taken
    }

    public static func runChild(path: String, allowInsecure: Bool, sandbox: SandboxPlan?, taken: [QueryParameter] = [],
                                logger: Logger) -> Int32 {
        // Anything the plug-in prints must not be mistaken for the report.
        let report = dup(1)
        dup2(2, 1)
        var lines: [String] = []
        do throws(PluginLoadError) {
            if let sandbox {
                do {
                    _ = try WorkerSandbox.enter(sandbox, report: nil, loadedFrom: WorkerMain.loadedFiles(
                        path, checking: FileSecurity(allowInsecure: allowInsecure)))
                } catch {
                    throw PluginLoadError(path: path, reason: .other("cannot enter the sandbox: \(error)"))
                }
            }
            let owners = RouteOwners(taken)
            let plugin = try PluginLoader(logger: logger, security: FileSecurity(allowInsecure: allowInsecure))
                .load(path, from: WorkerMain.libraryDescriptor) { owners.owner(ofSameShapeAs: $0) }
            let info = plugin.info
            lines.append(["plugin", info.name, info.version, "\(info.abiMajor).\(info.abiMinor)", info.summary].map(escape).joined(separator: "\t"))
            for route in plugin.routes { lines.append("route\t" + escape(route.text)) }
            // A separate line kind, after the routes: a reader that does not
            // know it skips it (unknown kinds are ignored).
            for (route, signature) in zip(plugin.routes, plugin.signatures) {
                if let signature { lines.append(["signature", route.text, signature.description].map(escape).joined(separator: "\t")) }
            }
            for refused in plugin.refusedRoutes {
                lines.append(["refused", refused.pattern, refused.owner].map(escape).joined(separator: "\t"))
            }
        } catch {
            lines.append(["error", encode(error.reason), escape(error.description)].joined(separator: "\t"))
        }
        let text = lines.joined(separator: "\n") + "\n"
        _ = text.withCString { write(report, $0, strlen($0)) }
        return 0
    }

    private static func parse(_ text: String, path: String) -> PluginStatus {
        var status = PluginStatus(path: path, info: nil, routes: [], error: nil)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map { unescape(String($0)) }
            switch fields.first {
            case "plugin" where fields.count == 5:
                // The report comes from a process that ran the plug-in's
                // code: a name must be a name, as the host checks a worker's.
                if let problem = PluginLoader.reportedIdentityProblem(name: fields[1], version: fields[2], summary: fields[4]) {
                    return failed(path, .other("its probe \(problem)"))
                }
                let abi = fields[3].split(separator: ".").compactMap { Int($0) }
                status.info = PluginInfo(path: path, name: fields[1], version: fields[2], summary: fields[4],
                                         abiMajor: abi.first ?? 0, abiMinor: abi.dropFirst().first ?? 0)
            case "route" where fields.count == 2:
                if let pattern = try? RoutePattern(fields[1]) { status.routes.append(pattern) }
            case "signature" where fields.count == 3:
                status.signatures[fields[1]] = fields[2]
            case "refused" where fields.count == 3:
                status.refusedRoutes.append(RefusedRoute(pattern: fields[1], owner: fields[2]))
            case "error" where fields.count == 3:
                status.error = PluginLoadError(path: path, reason: decode(fields[1], message: fields[2], path: path))
            default:
                continue
            }
        }
        if status.info == nil && status.error == nil {
            status.error = PluginLoadError(path: path, reason: .other("the probe ended without a report"))
        }
        return status
    }

    private static func failed(_ path: String, _ reason: PluginLoadError.Reason) -> PluginStatus {
        PluginStatus(path: path, info: nil, routes: [], error: PluginLoadError(path: path, reason: reason))
    }

    /// The reason travels as its kind plus the full message, which the
    /// parent shows as is.
    private static func encode(_ reason: PluginLoadError.Reason) -> String {
        switch reason {
        case .notAPlugin: return "notAPlugin"
        case .badDescriptor: return "badDescriptor"
        case .registrationFailed: return "registrationFailed"
        case .badManifest: return "badManifest"
        default: return "other"
        }
    }

    private static func decode(_ kind: String, message: String, path: String) -> PluginLoadError.Reason {
        // Keep the child's full wording; strip the path it already carries.
        let prefix = path + ": "
        let text = message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
        switch kind {
        case "notAPlugin": return .notAPlugin
        case "badManifest":
            let manifestPrefix = "binding manifest: "
            return .badManifest(text.hasPrefix(manifestPrefix) ? String(text.dropFirst(manifestPrefix.count)) : text)
        default: return .other(text)
        }
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\t", with: "\\t")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func unescape(_ text: String) -> String {
        var result = ""
        var escaping = false
        for character in text {
            if escaping {
                result.append(character == "t" ? "\t" : character == "n" ? "\n" : character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// The most a probe's report may hold: a plug-in that writes more is
    /// not reporting (it held `check` at 4 GB before).
    static let maxReportBytes = 1 << 20

    /// Everything until end of file; nil if `deadline` passes first, or
    /// past `maxReportBytes` (then `tooLong` is set).
    static func readAll(_ descriptor: Int32, deadline: UInt64, tooLong: inout Bool) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = MonotonicClock.now
            guard now < deadline else { return nil }
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let waited = poll(&ready, 1, Int32((deadline - now) / 1_000_000) + 1)
            if waited < 0 && errno == EINTR { continue }
            if waited == 0 { continue }
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maxReportBytes {
                tooLong = true
                return nil
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Logs what the probe printed (what its pipe holds), a line at a
    /// time, escaped and cut as a worker's output is.
    private static func logPrinted(_ descriptor: Int32, by path: String, to logger: Logger?) {
        guard let logger else { return }
        var lines = OutputLines()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let log = { (line: OutputLines.Line) in WorkerOutputRelay.log(line, plugin: path, stream: "stderr", to: logger) }
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            chunk.withUnsafeBytes { lines.take(UnsafeRawBufferPointer(rebasing: $0[..<count]), emit: log) }
        }
        lines.end(emit: log)
    }

    /// SIGSEGV, SIGABRT… for messages.
    public static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: return "SIGSEGV"
        case SIGABRT: return "SIGABRT"
        case SIGBUS: return "SIGBUS"
        case SIGILL: return "SIGILL"
        case SIGFPE: return "SIGFPE"
        case SIGKILL: return "SIGKILL"
        case SIGTERM: return "SIGTERM"
        case SIGTRAP: return "SIGTRAP"
        default: return String(cString: strsignal(signal))
        }
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
