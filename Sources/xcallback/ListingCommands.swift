import ArgumentParser
import XCallbackHost
import XCallbackSandbox

/// Text from a file name or a plug-in, on one line.
private func shown(_ text: String) -> String { PrintableText.escaping(text) }

/// Probes every plug-in file of the directories, each in a child process.
private func probeAll(_ options: PluginDirectoryOptions, sandboxing: WorkerSandboxing) throws -> [PluginStatus] {
    let scan = PluginDiscovery(directories: options.resolved,
                               security: FileSecurity(allowInsecure: options.allowInsecure)).scan()
    if options.areExplicit, let problem = scan.unreadableDirectories.first {
        throw Failure.exit("unusable plug-in directory: \(problem)")
    }
    let refused = scan.refused.map { PluginStatus(path: $0.path, info: nil, routes: [], error: $0) }
    let probed = scan.candidates.map {
        PluginProbe.probe($0, executable: Environment.executable, allowInsecure: options.allowInsecure,
                          sandboxing: sandboxing)
    }
    sandboxing.removeScratchFolders()
    return (probed + refused).sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
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
        for status in try probeAll(plugins, sandboxing: sandboxing) {
            let effective = sandboxing.describe(forPluginAt: status.path, security: security, isolation: .process)
            if json {
                print(JSONText.object([
                    ("path", .string(status.path)),
                    ("status", .string(status.isLoaded ? "loaded" : "rejected")),
                    ("name", status.info.map { .string($0.name) } ?? .null),
                    ("version", status.info.map { .string($0.version) } ?? .null),
                    ("abi", status.info.map { .string("\($0.abiMajor).\($0.abiMinor)") } ?? .null),
                    ("routes", .number(status.routes.count)),
                    ("error", status.error.map { .string($0.description) } ?? .null),
                    ("sandbox", status.isLoaded ? .string(effective) : .null),
                ]))
            } else if let info = status.info, status.isLoaded {
                print("loaded    \(shown(info.name)) \(shown(info.version)) (ABI \(info.abiMajor).\(info.abiMinor), \(status.routes.count) routes; sandbox: \(shown(effective)))  \(shown(status.path))")
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
        let statuses = try probeAll(plugins, sandboxing: WorkerSandboxing(mode: .auto))
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

    @Argument(help: "The plug-in file (.so, or a .xcallback.toml binding manifest).") var file: String
    @Flag(name: .customLong("allow-insecure-plugins"), help: "Skip the ownership and permission checks.")
    var allowInsecure = false
    @OptionGroup var sandbox: SandboxOptions

    func run() throws {
        let sandboxing = try sandbox.sandboxing()
        let status = PluginProbe.probe(file, executable: Environment.executable, allowInsecure: allowInsecure,
                                       sandboxing: sandboxing)
        sandboxing.removeScratchFolders()
        guard status.isLoaded, let info = status.info else {
            throw Failure.exit(status.error?.description ?? "\(file): not a valid plug-in")
        }
        let effective = sandboxing.describe(forPluginAt: file, security: FileSecurity(allowInsecure: allowInsecure),
                                            isolation: .process)
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

/// The child side of PluginProbe; not for people.
struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: PluginProbe.subcommand, shouldDisplay: false)

    @Argument var file: String
    @Flag(name: .customLong("allow-insecure-plugins")) var allowInsecure = false
    @Option(name: .customLong("sandbox")) var sandbox: String?

    func run() throws {
        Diagnostics.bootstrap(level: .error)
        let plan = sandbox.flatMap(SandboxPlan.init(encoded:))
        if sandbox != nil && plan == nil { throw ExitCode(2) }
        throw ExitCode(PluginProbe.runChild(path: file, allowInsecure: allowInsecure, sandbox: plan,
                                            logger: Diagnostics.logger))
    }
}

/// Just enough JSON for listings.
enum JSONText {
    enum Value {
        case string(String), number(Int), bool(Bool), null
    }

    static func object(_ fields: [(String, Value)]) -> String {
        "{" + fields.map { name, value in
            let rendered: String
            switch value {
            case .string(let text): rendered = quote(text)
            case .number(let number): rendered = String(number)
            case .bool(let value): rendered = value ? "true" : "false"
            case .null: rendered = "null"
            }
            return quote(name) + ":" + rendered
        }.joined(separator: ",") + "}"
    }

    static func quote(_ text: String) -> String { JSON.quoted(text) }
}

/// A worker process of `run --isolation process`; not for people.
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: WorkerMain.subcommand, shouldDisplay: false)

    @Argument var file: String
    @Option var parent: Int32
    @Flag(name: .customLong("allow-insecure-plugins")) var allowInsecure = false
    @Option(name: .customLong("sandbox")) var sandbox: String?

    func run() throws {
        Diagnostics.bootstrap(level: .warning, format: Diagnostics.inheritedFormat)
        var plan: SandboxPlan?
        if let sandbox {
            guard let decoded = SandboxPlan(encoded: sandbox) else { throw ExitCode(2) }
            plan = decoded
        }
        throw ExitCode(WorkerMain.run(pluginPath: file, parent: parent, allowInsecure: allowInsecure, sandbox: plan,
                                      logger: Diagnostics.logger))
    }
}
