/// How hard the host insists on a sandbox (`--sandbox`).
public enum SandboxMode: String, Sendable, CaseIterable {
    /// Every layer the kernel offers; a one-line warning for any it lacks.
    case auto
    /// Refuse to start unless Landlock and seccomp are both available.
    case strict
    /// No sandbox: workers run with the host user's full authority.
    case off
}

/// The operator's grants (`--sandbox-config FILE`): a ceiling for every
/// plug-in and one per plug-in file.
///
/// ```toml
/// [all]                 # every plug-in
/// network = false
/// memory = 256
/// [plugin.libweather]   # the plug-in file libweather.so (its name without .so)
/// network = true        # a field set here replaces the one in [all]
/// ```
///
/// Per-plug-in sections are keyed by the plug-in's *file* name, never by
/// the name a plug-in gives itself: a plug-in could claim another's name,
/// but not the operator's file.
public struct SandboxPolicy: Sendable, Equatable {
    public var all = CapabilityCeiling()
    public var plugins: [String: CapabilityCeiling] = [:]

    public init() {}

    public init(parsing text: String, file: String) throws(CapabilityFileError) {
        let table = try CapabilityKeys.parse(text, file: file)
        for key in table.keys where key != "all" && key != "plugin" {
            throw CapabilityFileError("\(file): unknown section '\(key)' (known: [all], [plugin.NAME])")
        }
        if let all = table["all"] {
            guard let section = all.table else { throw CapabilityFileError("\(file): 'all' must be a table ([all])") }
            self.all = try CapabilityKeys.ceiling(from: section, in: "\(file) [all]")
        }
        if let plugin = table["plugin"] {
            guard let sections = plugin.table else { throw CapabilityFileError("\(file): 'plugin' must hold [plugin.NAME] tables") }
            for name in sections.keys {
                guard let section = sections[name]?.table else {
                    throw CapabilityFileError("\(file): 'plugin.\(name)' must be a table")
                }
                plugins[name] = try CapabilityKeys.ceiling(from: section, in: "\(file) [plugin.\(name)]")
            }
        }
    }

    /// The ceiling for the plug-in file at `path`.
    public func ceiling(forPluginAt path: String) -> CapabilityCeiling {
        plugins[CapabilityDeclaration.baseName(of: path)].map { all.overridden(by: $0) } ?? all
    }
}
