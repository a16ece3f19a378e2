import XCallbackBridge
import XCallbackRouting
import XCallbackSystem
import XCallbackURL

/// The message of a `NotFoundAction` that no route matched: what was asked
/// for, then what may explain the miss, so the person reading the error
/// callback need not go to the host's log: the route nearest to it (a typo),
/// a plug-in for its scheme that is turned away now (quarantined), a
/// plug-in file that looks like it serves the scheme and was refused, or,
/// when no route has the scheme at all, a plug-in directory that was skipped
/// (group-writable, say): its plug-ins were never seen, so no file can be named.
struct NotFoundMessage {
    var scheme: String
    var host: String
    var path: [String]

    init(_ url: RequestURL) {
        (scheme, host, path) = (url.scheme, url.host, url.pathSegments)
    }

    /// The message, with whatever of the registry's state bears on it.
    func text(table: RouteTable<RouteTarget>, statuses: [PluginStatus], skippedDirectories: [String] = []) -> String {
        var message = "no route matches \(scheme)://\(host)/\(path.joined(separator: "/"))"
        if let nearest = table.nearestRoute(scheme: scheme, host: host, path: path) {
            message += " (did you mean \(nearest.text)?)"
        }
        let wanted = PluginNaming.scheme(forName: scheme)
        if let reason = table.values(ofScheme: scheme).lazy.compactMap({ $0.endpoint.unavailableReason }).first {
            message += "; \(reason)"
        } else if let refused = statuses.first(where: { $0.error != nil && Self.mayServe(wanted, $0) }),
                  let error = refused.error {
            message += "; plug-in file \(PrintableText.escaping(refused.path)) was refused: \(Self.phrase(error))"
        } else if let skipped = skippedDirectories.first, table.values(ofScheme: scheme).isEmpty {
            // Whole, with its remedy (chmod g-w): a person fixes the folder.
            let text = PrintableText.escaping(skipped)
            message += "; skipped plug-in directory \(text.count > 400 ? String(text.prefix(399)) + "…" : text)"
        }
        return message
    }

    /// A refused file may serve the scheme when its plug-in's name, or the
    /// file's name without `lib` and extension, is the scheme: what
    /// `xcallback new` makes, and how the samples are named.
    private static func mayServe(_ scheme: String, _ status: PluginStatus) -> Bool {
        if let name = status.info?.name, PluginNaming.scheme(forName: name) == scheme { return true }
        var stem = Substring(status.path.split(separator: "/").last ?? "")
        if stem.hasPrefix("lib") { stem = stem.dropFirst(3) }
        if let dot = stem.firstIndex(of: ".") { stem = stem[..<dot] }
        return !stem.isEmpty && PluginNaming.scheme(forName: String(stem)) == scheme
    }

    /// The refusal in one phrase: its first clause, at most 160 characters.
    private static func phrase(_ error: PluginLoadError) -> String {
        var text = Substring(error.reasonText)
        if text.hasPrefix("refused: ") { text = text.dropFirst("refused: ".count) }
        if let end = text.firstIndex(of: ";") { text = text[..<end] }
        return text.count > 160 ? text.prefix(159) + "…" : String(text)
    }
}
