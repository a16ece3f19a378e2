#if Queue  // the package's Queue trait: swift build --traits Queue
import Foundation
import Testing
@testable import XCallbackQueue

@Suite("Queue location: libpq's URL, variables and password file")
struct QueueLocationTests {
    let noEnvironment: [String: String] = ["HOME": "/nonexistent"]

    @Test("a full URL: user, password, host, port, database, sslmode")
    func fullURL() throws {
        let location = try QueueLocation(parsing: "postgresql://ana:p%40ss@db.example:6543/jobs?sslmode=require",
                                         environment: noEnvironment)
        #expect(location.user == "ana")
        #expect(location.password == "p@ss")
        #expect(location.host == "db.example")
        #expect(location.port == 6543)
        #expect(location.database == "jobs")
        #expect(location.sslMode == .require)
        #expect(!location.usesUnixSocket)
    }

    @Test("the description never shows the password")
    func redacted() throws {
        let location = try QueueLocation(parsing: "postgres://ana:topsecret@db/jobs", environment: noEnvironment)
        #expect(location.description == "postgresql://ana@db:5432/jobs")
        #expect(!"\(location)".contains("topsecret"))
    }

    @Test("a Unix socket folder, percent-encoded as the host or given as ?host=")
    func socketFolder() throws {
        let encoded = try QueueLocation(parsing: "postgresql://%2Ftmp%2Fpg/jobs", environment: noEnvironment)
        #expect(encoded.host == "/tmp/pg")
        #expect(encoded.socketPath == "/tmp/pg/.s.PGSQL.5432")
        let option = try QueueLocation(parsing: "postgresql://ana@/jobs?host=/run/pg&port=5433", environment: noEnvironment)
        #expect(option.host == "/run/pg")
        #expect(option.socketPath == "/run/pg/.s.PGSQL.5433")
        #expect(option.description == "postgresql://ana@/jobs?host=/run/pg&port=5433")
    }

    @Test("the description is a URL that parses back to the same place, and --psql's drops only the schema", arguments: [
        "postgresql://ana:secret@/jobs?host=/run/pg&port=5433&schema=orders",
        "postgresql://ana@db.example:6543/jobs?sslmode=require",
        "postgresql://ana@[::1]:5432/jobs",
        "postgresql://an%40a@/my%20db?host=/tmp/it's%20here",
    ])
    func descriptionParses(url: String) throws {
        let location = try QueueLocation(parsing: url, environment: noEnvironment)
        var expected = location
        expected.password = nil
        #expect(try QueueLocation(parsing: location.description, environment: noEnvironment) == expected)
        #expect(!location.description.contains("secret") && !location.description.contains("'"))
        var withoutSchema = expected
        withoutSchema.schema = QueueLocation.defaultSchema
        #expect(!location.libpqURL.contains("schema="))
        #expect(try QueueLocation(parsing: location.libpqURL, environment: noEnvironment) == withoutSchema)
    }

    @Test("PG* variables fill what the URL leaves out; the URL wins")
    func environment() throws {
        let environment = ["PGHOST": "envhost", "PGPORT": "7000", "PGUSER": "envuser", "PGPASSWORD": "envpw",
                           "PGDATABASE": "envdb", "PGSSLMODE": "disable", "HOME": "/nonexistent"]
        let empty = try QueueLocation(parsing: "", environment: environment)
        #expect(empty.host == "envhost" && empty.port == 7000 && empty.user == "envuser")
        #expect(empty.password == "envpw" && empty.database == "envdb" && empty.sslMode == .disable)
        let url = try QueueLocation(parsing: "postgresql://urluser@urlhost/urldb", environment: environment)
        #expect(url.host == "urlhost" && url.user == "urluser" && url.database == "urldb" && url.port == 7000)
    }

    @Test("defaults: Debian's socket folder, port 5432, database named after the user, sslmode prefer")
    func defaults() throws {
        let location = try QueueLocation(parsing: "postgresql:///jobs", environment: noEnvironment)
        #expect(location.host == "/var/run/postgresql")
        #expect(location.port == 5432)
        #expect(location.sslMode == .prefer)
        let noDatabase = try QueueLocation(parsing: "postgresql://bob@", environment: noEnvironment)
        #expect(noDatabase.database == "bob")
    }

    @Test("a password file is read when no password is given, and ignored when others may read it")
    func passwordFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pgpass-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("pgpass").path
        try Data("# comment\nother:*:*:*:nope\ndb:5432:jobs:ana:pa\\:ss\n*:*:*:bob:bobs\n".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        let environment = ["PGPASSFILE": file]
        #expect(try QueueLocation(parsing: "postgresql://ana@db/jobs", environment: environment).password == "pa:ss")
        #expect(try QueueLocation(parsing: "postgresql://bob@x/y", environment: environment).password == "bobs")
        #expect(try QueueLocation(parsing: "postgresql://ana:given@db/jobs", environment: environment).password == "given")
        chmod(file, 0o644)
        let exposed = try QueueLocation(parsing: "postgresql://ana@db/jobs", environment: environment)
        #expect(exposed.password == nil)
        #expect(exposed.passwordFileProblem
                == "password file \"\(file)\" has group or world access; permissions should be u=rw (0600) or less")
    }

    @Test("mistakes are errors that say what is wrong", arguments: [
        ("mysql://db/x", "must be a postgresql:// URL"),
        ("postgresql://db:99999/x", "port is not a number from 1 to 65535"),
        ("postgresql://db/x?sslmode=sometimes", "is not one of disable"),
        ("postgresql://db/x?frobnicate=1", "does not know: 'frobnicate'"),
        ("postgresql://db/x?schema=Bad-Name", "must be lower-case letters"),
    ])
    func mistakes(url: String, message: String) {
        #expect {
            _ = try QueueLocation(parsing: url, environment: noEnvironment)
        } throws: { error in
            (error as? QueueError)?.message.contains(message) == true
        }
    }

    @Test("outcome parameters survive storage exactly: order, repeats, and every byte")
    func storedParameters() {
        let parameters = [
            QueryParameterFixture.make("result", "a=b&c d+é"), QueryParameterFixture.make("result", ""),
            QueryParameterFixture.make("x&y", "100%"),
        ]
        let text = StoredParameters.encode(parameters)
        #expect(!text.contains(" "))
        #expect(StoredParameters.decode(text) == parameters)
        #expect(StoredParameters.decode("") == [])
    }

    @Test("no error message repeats the password, however the URL is mistyped", arguments: [
        "postgresql://bob:S3CRETpw%zz@localhost/db", "postgresql://h/db?password=S3CRETpw%zz",
        "postgresql:/bob:S3CRETpw@localhost/db", "postgresql//bob:S3CRETpw@h/db", "pg://h/db?password=S3CRETpw",
        "postgresql://bob:S3CRETpw/db", "postgresql://h/db?password=S3CRETpw&port=S3CRETpw",
    ])
    func errorsNeverShowThePassword(url: String) {
        do {
            let location = try QueueLocation(parsing: url, environment: noEnvironment)
            #expect(!location.description.contains("S3CRET"))
        } catch {
            #expect(!error.message.contains("S3CRET"), "\(error.message)")
        }
    }
}
#endif
