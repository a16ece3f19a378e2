#if Queue  // the package's Queue trait: swift build --traits Queue
import PostgresNIO
import Testing
@testable import XCallbackQueue

#if canImport(Glibc)
import Glibc
#endif

@Suite("ConnectFailure: what was tried, what went wrong, what to check")
struct ConnectFailureTests {
    let noEnvironment: [String: String] = ["HOME": "/nonexistent"]

    @Test("no socket file: the socket path, user and database, and where to look; no SwiftNIO words")
    func missingSocket() throws {
        let location = try QueueLocation(parsing: "postgresql://ana:pw@/jobs?host=/run/pg", environment: noEnvironment)
        let failure = ConnectFailure(location: location, underlying: IOError(errnoCode: ENOENT, reason: "connect(descriptor:addr:size:)"))
        let text = failure.description
        #expect(text.hasPrefix("cannot connect to PostgreSQL on the Unix socket /run/pg/.s.PGSQL.5432 as user ana, database jobs: no such socket file"), "\(text)")
        #expect(text.contains("unix_socket_directories"), "\(text)")
        #expect(text.contains("--wait-for-database"), "\(text)")
        #expect(!text.contains("descriptor") && !text.contains("errno") && !text.contains("pw"), "\(text)")
        #expect(failure.mayPass)
    }

    @Test("refused on TCP: host, port, user, database, and listen_addresses to check")
    func refused() throws {
        let location = try QueueLocation(parsing: "postgresql://ana@db.example:6543/jobs", environment: noEnvironment)
        let text = ConnectFailure(location: location, underlying: IOError(errnoCode: ECONNREFUSED, reason: "connect")).description
        #expect(text.hasPrefix("cannot connect to PostgreSQL on host db.example, port 6543, as user ana, database jobs: the connection was refused"), "\(text)")
        #expect(text.contains("listen_addresses"), "\(text)")
    }

    @Test("a connect timeout says how long it waited and what to check")
    func timeout() throws {
        let location = try QueueLocation(parsing: "postgresql://ana@10.1.2.3/jobs", environment: noEnvironment)
        let failure = ConnectFailure(location: location, underlying: ChannelError.connectTimeout(.seconds(10)))
        #expect(failure.description.contains("no answer within 10 s. Check the host name or address, the port, and any firewall"),
                "\(failure.description)")
        #expect(failure.mayPass)
    }
}
#endif
