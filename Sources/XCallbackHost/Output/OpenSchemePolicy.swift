/// Which callback URLs `--open` may hand to COMMAND. A desktop opener
/// (`xdg-open`) acts on any scheme it knows, and some of them act on the
/// local machine rather than ask another program: a request must not be
/// able to make the host open `file:///etc/passwd` or run `javascript:`.
/// Those schemes are refused unless the operator allows them by name.
public struct OpenSchemePolicy: Sendable, Equatable {
    /// Refused unless allowed: local files and file shares, inline code and
    /// content, browser-internal pages, and desktop locations that open a
    /// file manager or a help viewer on this machine.
    public static let refusedByDefault: Set<String> = [
        "file", "javascript", "vbscript", "data", "blob", "filesystem", "about", "view-source", "jar",
        "smb", "nfs", "sftp", "ftp", "ftps", "dav", "davs", "afp",
        "help", "ghelp", "man", "info", "trash", "recent", "computer", "network", "burn",
    ]

    /// Schemes the operator allowed (`--open-scheme`), lowercased.
    public var allowed: Set<String> = []

    public init(allowing allowed: [String] = []) {
        self.allowed = Set(allowed.map { $0.lowercased() })
    }

    /// The scheme of `url` if `--open` must not open it, else nil.
    public func refusedScheme(of url: String) -> String? {
        guard let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")) else { return "" }
        let scheme = String(url[..<colon]).lowercased()
        if Self.refusedByDefault.contains(scheme) && !allowed.contains(scheme) { return scheme }
        return nil
    }
}
