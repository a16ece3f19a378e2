/// The per-user XDG base directories (XDG Base Directory Specification):
/// `$XDG_DATA_HOME` and `$XDG_CONFIG_HOME`, or their defaults under `$HOME`.
struct XDGDirectories {
    let dataHome: String
    let configHome: String

    init(environment: [String: String]) throws(XDGDirectoryError) {
        dataHome = try Self.resolve("XDG_DATA_HOME", default: ".local/share", environment: environment)
        configHome = try Self.resolve("XDG_CONFIG_HOME", default: ".config", environment: environment)
    }

    /// Where user desktop entries live.
    var applications: String { dataHome + "/applications" }

    /// The user's default-application choices.
    var mimeAppsList: String { configHome + "/mimeapps.list" }

    /// Every user file that may hold an association: the current location,
    /// then the deprecated one some tools (KDE 4's xdg-mime) still write.
    var mimeAppsLists: [String] { [mimeAppsList, applications + "/mimeapps.list"] }

    private static func resolve(_ variable: String, default relative: String,
                                environment: [String: String]) throws(XDGDirectoryError) -> String {
        // The spec: a relative path in these variables is invalid and ignored.
        if let value = environment[variable], value.hasPrefix("/") { return value }
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw XDGDirectoryError(variable: variable)
        }
        return (home.hasSuffix("/") ? home : home + "/") + relative
    }
}

/// Neither the variable nor `$HOME` gives an absolute directory.
struct XDGDirectoryError: Error, CustomStringConvertible {
    let variable: String
    var description: String { "cannot tell where to write: neither $\(variable) nor $HOME is an absolute path" }
}
