/// Which of the host's environment variables a sandboxed worker sees: the
/// environment is where operators keep tokens and passwords, so a plug-in
/// gets only what locale, time and its own runtime need, plus the names it
/// declares (`environment = [...]`).
public enum SandboxEnvironment {
    /// Passed to every sandboxed worker.
    public static let alwaysPassed: Set<String> = [
        "PATH", "LANG", "LANGUAGE", "TZ", "HOME", "USER", "LOGNAME",
    ]

    /// Whether variable `name` reaches a worker with `capabilities`.
    public static func passes(_ name: Substring, for capabilities: Capabilities) -> Bool {
        name.hasPrefix("LC_") || alwaysPassed.contains(String(name)) || capabilities.environment.contains(String(name))
    }
}
