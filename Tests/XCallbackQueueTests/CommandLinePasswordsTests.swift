#if Queue  // the package's Queue trait: swift build --traits Queue
import Testing
@testable import XCallbackQueue

/// docs/queue.md, "Connecting": a password in a URL on the command line is
/// overwritten in the process's arguments, so `ps` does not show it.
@Suite("Passwords scrubbed from the command line")
struct CommandLinePasswordsTests {
    /// `argument` with its password ranges replaced by x.
    func scrubbed(_ argument: String) -> String {
        var bytes = Array(argument.utf8)
        for range in CommandLinePasswords.passwordRanges(in: bytes) {
            for offset in range { bytes[offset] = UInt8(ascii: "x") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func theUserInformationsPasswordIsOverwritten() {
        #expect(scrubbed("postgresql://ana:s3cret@db:5432/jobs") == "postgresql://ana:xxxxxx@db:5432/jobs")
        #expect(scrubbed("postgres://ana:p%40ss@db/jobs") == "postgres://ana:xxxxxx@db/jobs")
        #expect(scrubbed("--queue=postgresql://ana:pw@/jobs?host=/run/pg") == "--queue=postgresql://ana:xx@/jobs?host=/run/pg")
    }

    @Test func aPasswordOptionIsOverwritten() {
        #expect(scrubbed("postgresql:///jobs?host=/tmp&password=hunter2&sslmode=disable")
            == "postgresql:///jobs?host=/tmp&password=xxxxxxx&sslmode=disable")
        #expect(scrubbed("postgresql://ana:a@h/d?password=b#x") == "postgresql://ana:x@h/d?password=x#x")
    }

    @Test func anythingElseIsLeftAlone() {
        for argument in ["postgresql://ana@db/jobs", "postgresql:///jobs", "--max-attempts", "calc://x:y@z/add?password=p",
                         "postgresql://ana:@db/jobs", "postgresql://db/jobs?passwords=x", ""] {
            #expect(scrubbed(argument) == argument, "\(argument)")
        }
    }

    @Test func everyURLInOneArgumentIsScrubbed() {
        #expect(scrubbed("postgres://a:b@h postgresql://c:d@h") == "postgres://a:x@h postgresql://c:x@h")
    }
}
#endif
