/// The scheme a plug-in's name gives by convention: `xcallback new my_tool`
/// answers `my-tool://` (RFC 3986 allows no `_` in a scheme). The template
/// writes it so, and a miss on a scheme looks for a refused plug-in by it.
public enum PluginNaming {
    /// `name` lowercased, with each `_` a `-`.
    public static func scheme(forName name: String) -> String {
        String(name.lowercased().map { $0 == "_" ? "-" : $0 })
    }
}
