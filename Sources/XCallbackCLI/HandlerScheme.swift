/// A URL scheme that `install-handler` may take over: RFC 3986 syntax
/// (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`), lowercased, and not one
/// of the schemes a desktop needs for itself.
struct HandlerScheme: Hashable, CustomStringConvertible {
    let name: String

    /// Schemes of web pages, files and mail: taking one over would send
    /// every such link on the desktop to xcallback.
    static let reservedNames: Set<String> = [
        "about", "blob", "data", "file", "ftp", "http", "https", "javascript", "mailto", "ws", "wss",
    ]

    /// Validates syntax only; `allowReserved` is for removing, where a
    /// reserved name simply finds nothing of ours.
    init(validating text: String, allowReserved: Bool = false) throws(HandlerSchemeError) {
        let bytes = Array(text.utf8)
        guard let first = bytes.first else { throw HandlerSchemeError(scheme: text, reason: "a scheme cannot be empty") }
        if text.hasSuffix(":") || text.contains("://") {
            throw HandlerSchemeError(scheme: text, reason: "give the scheme alone, without ':' or '://' (calc, not calc://)")
        }
        guard Self.isLetter(first) else {
            throw HandlerSchemeError(scheme: text, reason: "a scheme must start with a letter (RFC 3986)")
        }
        if let bad = bytes.first(where: { !(Self.isLetter($0) || Self.isDigit($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")) }) {
            let shown = bad < 0x80 ? "'\(Character(Unicode.Scalar(bad)))'" : "a non-ASCII character"
            throw HandlerSchemeError(scheme: text, reason: "\(shown) is not allowed; a scheme has only letters, digits, '+', '-' and '.' (RFC 3986)")
        }
        // Schemes are case-insensitive; the canonical form is lowercase.
        let lowered = text.lowercased()
        if !allowReserved && Self.reservedNames.contains(lowered) {
            throw HandlerSchemeError(scheme: text, reason: "\(lowered) is a standard scheme (web pages, files, mail); taking it over would send every such link to xcallback")
        }
        name = lowered
    }

    /// The MIME type desktops use for a scheme's handler.
    var mimeType: String { "x-scheme-handler/" + name }

    /// The desktop file ID: one file per scheme, so each scheme installs and
    /// uninstalls without rewriting a file the others share.
    var desktopFileID: String { "xcallback-\(name).desktop" }

    var description: String { name }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}

/// Why a scheme name was refused.
struct HandlerSchemeError: Error, CustomStringConvertible {
    let scheme: String
    let reason: String
    var description: String { "cannot use scheme '\(scheme)': \(reason)" }
}
