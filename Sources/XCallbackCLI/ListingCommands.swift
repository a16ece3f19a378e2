import ArgumentParser
import XCallbackBridge
import XCallbackHost
import XCallbackSandbox
import XCallbackSystem
import XCallbackURL

/// Text from a file name or a plug-in, on one line.
private func shown(_ text: String) -> String { PrintableText.escaping(text) }

/// Probes every plug-in file of the directories, each in a worker started
/// as `run` starts it (`PluginProbe`), in the order the host loads them:
/// each is told the routes the ones before it own, so a conflict comes out
/// as it would in the host.
private func probeAll(_ options: PluginDirectoryOptions, sandboxing: WorkerSandboxing) throws -> [PluginStatus] {
    let scan = PluginDiscovery(directories: options.resolved,
                               security: FileSecurity(allowInsecure: options.allowInsecure)).scan()
    if options.areExplicit, let problem = scan.unreadableDirectories.first {
        throw Failure.exit("unusable plug-in directory: \(problem)")
    }
    // As `run` does: a default folder that is not there is not mentioned;
    // one that is there and cannot be used is.
    for problem in scan.unreadableDirectories where !scan.missingDirectories.contains(where: { problem.hasPrefix($0 + ": ") }) {
        Failure.note("skipping plug-in directory \(shown(problem))")
    }
    let refused = scan.refused.map { PluginStatus(path: $0.path, info: nil, routes: [], error: $0) }
    var taken: [QueryParameter] = []
    var names = Set<String>()
    var probed: [PluginStatus] = []
    let probe = PluginProbe(executable: Environment.executable, logger: Diagnostics.logger)
    let security = FileSecurity(allowInsecure: options.allowInsecure)
    for candidate in scan.candidates {
        var status = probe.probe(candidate, security: security, sandboxing: sandboxing, taken: taken)
        if let info = status.info, status.isLoaded {
            // The host refuses a second plug-in of the same name.
            if !names.insert(info.name).inserted {
                let first = probed.first { $0.info?.name == info.name }?.path ?? "another file"
                status.error = PluginLoadError(path: candidate, reason: .duplicateName(first))
            } else {
                taken += status.routes.map { QueryParameter(name: $0.text, value: info.name) }
            }
        }
        probed.append(status)
    }
    if let warning = sandboxing.removeScratchFolders().warning { Diagnostics.logger.warning("\(warning)") }
    return (probed + refused).sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
}

/// "; 1 route refused (calc://x-callback-url/add: plug-in 'calculator' owns it)".
private func refusals(_ status: PluginStatus) -> String {
    guard !status.refusedRoutes.isEmpty else { return "" }
    let each = status.refusedRoutes.map { "\(shown($0.pattern)): plug-in '\(shown($0.owner))' loaded first and owns a route of the same shape" }
    return "; \(status.refusedRoutes.count) route\(status.refusedRoutes.count == 1 ? "" : "s") refused (\(each.joined(separator: "; ")))"
}

struct PluginsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugins",
        abstract: "List every plug-in file found, loaded or rejected and why.")

    @OptionGroup var plugins: PluginDirectoryOptions
    @OptionGroup var sandbox: SandboxOptions
    @Flag(help: "One JSON object per plug-in file.") var json = false

    func run() throws {
        let sandboxing = try sandbox.sandboxing()
        let security = FileSecurity(allowInsecure: plugins.allowInsecure)
        let statuses = try probeAll(plugins, sandboxing: sandboxing)
        if statuses.isEmpty {
            Failure.note("no plug-in files found; searched \(plugins.resolved.map(shown).joined(separator: ", "))")
        }
        for status in statuses {
            let sandbox = sandboxing.describing(forPluginAt: status.path, security: security, isolation: .process)
            let effective = sandbox.text
            if json {
                print(JSONText.object([
                    ("path", .string(status.path)),
                    ("status", .string(status.isLoaded ? "loaded" : "rejected")),
                    ("name", status.info.map { .string($0.name) } ?? .null),
                    ("version", status.info.map { .string($0.version) } ?? .null),
                    ("abi", status.info.map { .string("\($0.abiMajor).\($0.abiMinor)") } ?? .null),
                    ("routes", .number(status.routes.count)),
                    ("error", status.error.map { .string($0.description) } ?? .null),
                    ("sandbox", status.isLoaded ? JSONText.fields(of: sandbox) : .null),
                    ("refusedRoutes", .number(status.refusedRoutes.count)),
                ]))
            } else if let info = status.info, status.isLoaded {
                print("loaded    \(shown(info.name)) \(shown(info.version)) (ABI \(info.abiMajor).\(info.abiMinor), \(status.routes.count) routes\(refusals(status)); sandbox: \(shown(effective)))  \(shown(status.path))")
            } else {
                print("rejected  \(status.error?.description ?? shown(status.path))")
            }
        }
    }
}

struct RoutesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "routes",
        abstract: "Print the route table: each route pattern and the plug-in that owns it.")

    @OptionGroup var plugins: PluginDirectoryOptions
    @Flag(help: "One JSON object per route.") var json = false

    func run() throws {
        let statuses = try probeAll(plugins, sandboxing: WorkerSandboxing(mode: .auto, identity: try? WorkerIdentity.forHost(option: nil)))
        // The host's own routes come first: they are part of every table, and
        // their scheme is one no plug-in can take.
        for route in Correlation.builtInRoutes {
            if json {
                print(JSONText.object([("pattern", .string(route.text)), ("plugin", .null), ("builtIn", .bool(true))]))
            } else {
                print("\(route.text) → (built in)")
            }
        }
        for status in statuses where status.isLoaded {
            for refused in status.refusedRoutes {
                let why = "refused: plug-in '\(refused.owner)' loaded first and owns a route of the same shape"
                if json {
                    print(JSONText.object([("pattern", .string(refused.pattern)), ("plugin", .string(status.info!.name)),
                                           ("builtIn", .bool(false)), ("refused", .string(why))]))
                } else {
                    print("\(shown(refused.pattern)) → \(shown(status.info!.name))  (\(shown(why)))")
                }
            }
            for route in status.routes {
                // Routes that call bound functions show their C declaration.
                let signature = status.signature(of: route)
                if json {
                    var fields: [(String, JSONText.Value)] = [
                        ("pattern", .string(route.text)), ("plugin", .string(status.info!.name)), ("builtIn", .bool(false)),
                    ]
                    if let signature { fields.append(("signature", .string(signature))) }
                    print(JSONText.object(fields))
                } else if let signature {
                    print("\(shown(route.text)) → \(shown(status.info!.name))  \(shown(signature))")
                } else {
                    print("\(shown(route.text)) → \(shown(status.info!.name))")
                }
            }
        }
    }
}

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate one plug-in file without running a host.",
        discussion: "Exit 0 and its routes when valid; non-zero and a one-line reason when not.")

    @Argument(help: "The plug-in file (.so, or a .xcallback.toml binding manifest); none with --plugins.",
              completion: .file(extensions: ["so", "toml"])) var file: String?
    @Option(name: .customLong("plugins"), help: ArgumentHelp("Check every plug-in of this folder as the host would load them, conflicts included (repeatable).", valueName: "dir"),
            completion: .directory)
    var directories: [String] = []
    @Flag(name: .customLong("allow-insecure-plugins"), help: "Skip the ownership and permission checks.")
    var allowInsecure = false
    @OptionGroup var sandbox: SandboxOptions
    @Flag(help: "One JSON object: the plug-in, its routes and the sandbox its workers get (layers, system-call groups, grants).")
    var json = false

    func validate() throws {
        if (file == nil) == directories.isEmpty {
            throw ValidationError("name one plug-in file, or folders with --plugins")
        }
    }

    func run() throws {
        guard let file else { return try checkFolders() }
        let sandboxing = try sandbox.sandboxing()
        let status = PluginProbe(executable: Environment.executable, logger: Diagnostics.logger)
            .probe(file, security: FileSecurity(allowInsecure: allowInsecure), sandboxing: sandboxing)
        if let warning = sandboxing.removeScratchFolders().warning { Diagnostics.logger.warning("\(warning)") }
        guard status.isLoaded, let info = status.info else {
            throw Failure.exit(status.error?.description ?? "\(file): not a valid plug-in")
        }
        let security = FileSecurity(allowInsecure: allowInsecure)
        if json {
            print(JSONText.object([
                ("path", .string(file)),
                ("name", .string(info.name)),
                ("version", .string(info.version)),
                ("abi", .string("\(info.abiMajor).\(info.abiMinor)")),
                ("routes", .array(status.routes.map { .string($0.text) })),
                ("sandbox", JSONText.fields(of: sandboxing.describing(forPluginAt: file, security: security, isolation: .process))),
            ]))
            return
        }
        let effective = sandboxing.describe(forPluginAt: file, security: security, isolation: .process)
        print("\(shown(info.name)) \(shown(info.version)) (ABI \(info.abiMajor).\(info.abiMinor); sandbox: \(shown(effective)))")
        for route in status.routes {
            if let signature = status.signature(of: route) {
                print("\(shown(route.text))  \(shown(signature))")
            } else {
                print(shown(route.text))
            }
        }
    }
}

extension CheckCommand {
    /// `check --plugins DIR`: every file as the host would load it; exit 1
    /// when any is refused or loses a route to another plug-in.
    func checkFolders() throws {
        var options = PluginDirectoryOptions()
        options.directories = directories
        options.allowInsecure = allowInsecure
        let statuses = try probeAll(options, sandboxing: try sandbox.sandboxing())
        var problems = 0
        for status in statuses {
            if let info = status.info, status.isLoaded {
                print("ok        \(shown(info.name)) \(shown(info.version)) (\(status.routes.count) routes\(refusals(status)))  \(shown(status.path))")
                problems += status.refusedRoutes.count
            } else {
                print("refused   \(status.error?.description ?? shown(status.path))")
                problems += 1
            }
        }
        if problems > 0 {
            throw Failure.exit("\(problems) problem\(problems == 1 ? "" : "s") in \(directories.joined(separator: ", "))")
        }
    }
}

/// Just enough JSON for listings.
enum JSONText {
    indirect enum Value {
        case string(String), number(Int), bool(Bool), null
        case array([Value])
        case object([(String, Value)])
    }

    static func object(_ fields: [(String, Value)]) -> String {
        render(.object(fields))
    }

    static func render(_ value: Value) -> String {
        switch value {
        case .string(let text): quote(text)
        case .number(let number): String(number)
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        case .array(let values): "[" + values.map(render).joined(separator: ",") + "]"
        case .object(let fields): "{" + fields.map { quote($0) + ":" + render($1) }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ text: String) -> String { JSON.quoted(text) }

    /// A plug-in's sandbox as fields, its grants in the shape of a
    /// capability declaration (`NAME.caps.toml`: `network`, `memory` in MiB,
    /// `files` with `read` and `write`, ...): what scripts read, where the
    /// text line is for people.
    static func fields(of sandbox: SandboxDescription) -> Value {
        let strings = { (values: [String]) in Value.array(values.map(Value.string)) }
        let grants: Value = sandbox.grants.map { grants in
            .object([
                ("network", .bool(grants.network)), ("exec", .bool(grants.exec)), ("ipc", .bool(grants.ipc)),
                ("memory", .number(grants.memoryMiB)), ("open_files", .number(grants.openFiles)),
                ("processes", .number(grants.processes)), ("scratch", .number(grants.scratchMiB)),
                ("environment", strings(grants.environment)),
                ("files", .object([("read", strings(grants.filesRead)), ("write", strings(grants.filesWrite))])),
            ])
        } ?? .null
        return .object([
            ("mode", .string(sandbox.mode.rawValue)),
            ("layers", strings(sandbox.layers)),
            ("groups", strings(sandbox.groups)),
            ("grants", grants),
            ("fileView", .bool(sandbox.fileView)),
            ("uid", sandbox.uid.map { .number(Int($0)) } ?? .null),
            ("missing", sandbox.missing.map(Value.string) ?? .null),
            ("refused", sandbox.refused.map(Value.string) ?? .null),
        ])
    }
}

/// A worker process of `run --isolation process`; not for people.
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: WorkerMain.subcommand, shouldDisplay: false)

    @Argument var file: String
    @Option var parent: Int32
    /// The host, when it is not the parent.
    @Option var host: Int32?
    @Flag(name: .customLong("allow-insecure-plugins")) var allowInsecure = false
    @Option(name: .customLong("sandbox")) var sandbox: String?

    func run() throws {
        Diagnostics.bootstrapWorker(level: .warning)
        var plan: SandboxPlan?
        if let sandbox {
            guard let decoded = SandboxPlan(encoded: sandbox) else { throw ExitCode(2) }
            plan = decoded
        }
        throw ExitCode(WorkerMain.run(pluginPath: file, parent: parent, host: host ?? parent, allowInsecure: allowInsecure, sandbox: plan,
                                      logger: Diagnostics.logger))
    }
}

/// The process workers are forked from (`WorkerZygote`); not for people.
struct ZygoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: WorkerZygote.subcommand, shouldDisplay: false)

    @Option var parent: Int32
    /// Room in this command line for each worker's (ps shows it).
    @Option(name: .customLong("title-room")) var titleRoom: String?

    func run() throws {
        WorkerZygote.setCommandLine([CommandLine.arguments.first ?? "xcallback", WorkerZygote.subcommand,
                                     "--parent", String(parent)])
        WorkerSandbox.prepareForForking()
        WorkerZygote.warmUp()
        // Logging is set up here, once, as `__worker` sets it up (the same
        // level, and the host's format from the environment every worker
        // gets): each forked worker has it from the start.
        Diagnostics.bootstrapWorker(level: .warning)
        _ = Diagnostics.logger
        throw ExitCode(WorkerZygote.serve(parent: parent) { arguments in
            // In the forked child: what `xcallback __worker ARGUMENTS` runs,
            // without the argument parser, which was a third of a forked
            // worker's start (the host wrote these arguments itself).
            guard let worker = WorkerMain.Arguments(arguments) else { return 2 }
            return WorkerMain.run(pluginPath: worker.file, parent: worker.parent, host: worker.host, allowInsecure: worker.allowInsecure,
                                  sandbox: worker.sandbox, logger: Diagnostics.logger)
        })
    }
}
