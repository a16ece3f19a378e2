#if Queue  // the package's Queue trait: swift build --traits Queue
import Foundation

/// Where the queue's database is and how to log in, read the way libpq reads
/// it: a `postgresql://` URL (or `postgres://`), then `PGHOST`, `PGPORT`,
/// `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, then a password file
/// (`PGPASSFILE`, else `~/.pgpass`), then libpq's defaults. Its description
/// never shows the password.
public struct QueueLocation: Sendable, Equatable, CustomStringConvertible {
    /// A Unix socket folder (an absolute path) or a host name or address.
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    public var sslMode: SSLMode
    /// The queue's schema: several queues can share one database.
    public var schema: String
    /// Why the password file was not read, in libpq's words (`password file
    /// "…" has group or world access; …`), for the error that follows when
    /// the server asks for a password; nil when it was read or is absent.
    public var passwordFileProblem: String?

    /// libpq's `sslmode`, of which these matter to a client that has no
    /// client certificate.
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// Debian's server listens here; libpq built by Debian looks here first.
    public static let defaultSocketFolder = "/var/run/postgresql"
    public static let defaultSchema = "xcallback"

    /// Whether `host` names a Unix socket folder.
    public var usesUnixSocket: Bool { host.hasPrefix("/") }

    /// The socket file libpq would connect to.
    public var socketPath: String { "\(host)/.s.PGSQL.\(port)" }

    /// The queue's URL as this client reads it (`?schema=` when not the
    /// default), never with the password: what messages show, and what
    /// they suggest to run, so a suggestion parses as it is.
    public var description: String { url(withSchema: true) }

    /// The connection as a URL libpq reads (`psql "$(xcallback queue url
    /// QUEUE --psql)"`): without `schema`, an option libpq refuses, and
    /// without the password, which psql finds in PGPASSWORD or ~/.pgpass.
    public var libpqURL: String { url(withSchema: false) }

    /// `postgresql://user@host:port/database`, or for a Unix socket
    /// `postgresql://user@/database?host=FOLDER&port=PORT`; percent-encoded
    /// where a name needs it, so the text also survives single quotes.
    private func url(withSchema: Bool) -> String {
        var options: [String] = []
        var authority = ""
        if usesUnixSocket {
            options.append("host=" + Self.encode(host, keeping: "/"))
            options.append("port=\(port)")
        } else {
            authority = (host.contains(":") ? "[\(host)]" : Self.encode(host, keeping: "")) + ":\(port)"
        }
        if sslMode != .prefer { options.append("sslmode=\(sslMode.rawValue)") }
        if withSchema && schema != Self.defaultSchema { options.append("schema=\(schema)") }
        return "postgresql://\(Self.encode(user, keeping: ""))@\(authority)/\(Self.encode(database, keeping: ""))"
            + (options.isEmpty ? "" : "?" + options.joined(separator: "&"))
    }

    /// Percent-encodes all but unreserved characters and `extra`.
    private static func encode(_ text: String, keeping extra: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            let alphanumeric = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            if alphanumeric || "-._~".unicodeScalars.contains(scalar) || extra.unicodeScalars.contains(scalar) {
                out.unicodeScalars.append(scalar)
            } else {
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// Reads `text` (a URL, or empty for the environment and defaults).
    /// `environment` and `home` are parameters so tests need not change the
    /// process's own.
    public init(parsing text: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                home: String? = nil) throws(QueueError) {
        var host = environment["PGHOST"].flatMap { $0.isEmpty ? nil : $0 }
        var port = environment["PGPORT"].flatMap { Int($0) }
        var user = environment["PGUSER"].flatMap { $0.isEmpty ? nil : $0 }
        var password = environment["PGPASSWORD"]
        var database = environment["PGDATABASE"].flatMap { $0.isEmpty ? nil : $0 }
        var sslMode = environment["PGSSLMODE"].flatMap(SSLMode.init(rawValue:))
        var schema = Self.defaultSchema
        var passfile = environment["PGPASSFILE"]

        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty {
            let parts = try Self.parseURL(trimmed)
            if let value = parts.host { host = value }
            if let value = parts.port { port = value }
            if let value = parts.user { user = value }
            if let value = parts.password { password = value }
            if let value = parts.database { database = value }
            for (name, value) in parts.options {
                switch name {
                case "host": host = value
                case "port":
                    guard let number = Int(value) else { throw QueueError("the queue URL's port option is not a number") }
                    port = number
                case "user": user = value
                case "password": password = value
                case "dbname": database = value
                case "sslmode":
                    guard let mode = SSLMode(rawValue: value) else {
                        throw QueueError("the queue URL's sslmode '\(value)' is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    sslMode = mode
                case "passfile": passfile = value
                case "schema": schema = value
                case "application_name", "connect_timeout", "sslrootcert", "target_session_attrs":
                    break // accepted as libpq accepts them; not needed here
                default:
                    throw QueueError("the queue URL has an option this client does not know: '\(name)'")
                }
            }
        }
        guard Self.isPlainIdentifier(schema) else {
            throw QueueError("schema '\(schema)' must be lower-case letters, digits and underscores, starting with a letter")
        }
        let osUser = Self.currentUserName()
        self.host = host ?? Self.defaultSocketFolder
        self.port = port ?? 5432
        self.user = user ?? osUser
        self.database = database ?? self.user
        self.sslMode = sslMode ?? .prefer
        self.schema = schema
        if password == nil {
            let file = passfile ?? (home ?? environment["HOME"] ?? NSHomeDirectory()) + "/.pgpass"
            switch PasswordFile.lookup(path: file, host: self.host, port: self.port,
                                       database: self.database, user: self.user) {
            case .success(let found): password = found
            case .failure(let problem): passwordFileProblem = problem.message
            }
        }
        self.password = password
    }

    private struct URLParts {
        var host: String?
        var port: Int?
        var user: String?
        var password: String?
        var database: String?
        var options: [(String, String)] = []
    }

    /// `postgresql://[user[:password]@][host][:port][/database][?name=value&…]`,
    /// percent-decoded as libpq does (`%2Fvar%2Frun%2Fpostgresql` is a socket folder).
    private static func parseURL(_ text: String) throws(QueueError) -> URLParts {
        var rest: Substring
        if text.hasPrefix("postgresql://") {
            rest = text.dropFirst("postgresql://".count)
        } else if text.hasPrefix("postgres://") {
            rest = text.dropFirst("postgres://".count)
        } else {
            // Never echoed: a mistyped URL still holds its password.
            throw QueueError("the queue must be a postgresql:// URL, such as postgresql:///jobs for a local database (the URL given starts otherwise)")
        }
        var parts = URLParts()
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&") where !pair.isEmpty {
                let name = pair.prefix { $0 != "=" }
                let value = pair.dropFirst(name.count + 1)
                parts.options.append((try decode(name), try decode(value)))
            }
            rest = rest[..<question]
        }
        var authority = rest
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            let name = try decode(rest[rest.index(after: slash)...])
            if !name.isEmpty { parts.database = name }
        }
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                parts.user = try decode(credentials[..<colon])
                parts.password = try decode(credentials[credentials.index(after: colon)...])
            } else {
                parts.user = try decode(credentials)
            }
            if parts.user?.isEmpty == true { parts.user = nil }
        }
        var hostPart = authority
        if hostPart.hasPrefix("["), let close = hostPart.firstIndex(of: "]") {
            parts.host = String(hostPart[hostPart.index(after: hostPart.startIndex)..<close])
            hostPart = hostPart[hostPart.index(after: close)...]
            if hostPart.hasPrefix(":") { parts.port = try port(hostPart.dropFirst()) }
        } else if let colon = hostPart.lastIndex(of: ":") {
            parts.port = try port(hostPart[hostPart.index(after: colon)...])
            hostPart = hostPart[..<colon]
            if !hostPart.isEmpty { parts.host = try decode(hostPart) }
        } else if !hostPart.isEmpty {
            parts.host = try decode(hostPart)
        }
        return parts
    }

    private static func port(_ text: Substring) throws(QueueError) -> Int? {
        if text.isEmpty { return nil }
        guard let number = Int(text), (1...65535).contains(number) else {
            throw QueueError("the queue URL's port is not a number from 1 to 65535")
        }
        return number
    }

    private static func decode(_ text: Substring) throws(QueueError) -> String {
        guard let decoded = String(text).removingPercentEncoding else {
            throw QueueError("the queue URL has a bad percent-escape (a % not followed by two hex digits)")
        }
        return decoded
    }

    static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), name.utf8.count <= 48 else { return false }
        return name.utf8.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "_")
        }
    }

    private static func currentUserName() -> String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"] ?? "postgres"
    }
}

/// libpq's password file: `host:port:database:user:password` lines, `*`
/// matching anything, `\:` and `\\` escapes; ignored, as libpq ignores it,
/// when it is no plain file or group or others may read it, which is said
/// in libpq's words.
enum PasswordFile {
    static func lookup(path: String, host: String, port: Int, database: String,
                       user: String) -> Result<String?, QueueError> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .success(nil) }
        if info.st_mode & S_IFMT != S_IFREG {
            return .failure(QueueError("password file \"\(path)\" is not a plain file"))
        }
        if info.st_mode & 0o077 != 0 {
            return .failure(QueueError("password file \"\(path)\" has group or world access; permissions should be u=rw (0600) or less"))
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return .success(nil) }
        // libpq matches a socket connection against "localhost" as well as the folder.
        let hosts = host.hasPrefix("/") ? [host, "localhost"] : [host]
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            let fields = split(line)
            guard fields.count == 5 else { continue }
            func matches(_ field: String, _ values: [String]) -> Bool { field == "*" || values.contains(field) }
            if matches(fields[0], hosts), matches(fields[1], [String(port)]), matches(fields[2], [database]),
               matches(fields[3], [user]) {
                return .success(fields[4])
            }
        }
        return .success(nil)
    }

    private static func split(_ line: Substring) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" && fields.count < 4 {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }
}
#endif
