#if Queue  // the package's Queue trait: swift build --traits Queue
import Testing
@testable import XCallbackQueue

@Suite("RecentlyWritten")
struct RecentlyWrittenTests {
    @Test("an id is new once; the oldest are forgotten past the capacity")
    func remembersTheRecentOnes() {
        var written = RecentlyWritten(capacity: 3)
        let answers = [1, 1, 2, 3, 2, 4, 1, 3, 4, 2].map { written.insert(Int64($0)) }
        // 4 forgets 1, the second 1 forgets 2, the last 2 forgets 3.
        #expect(answers == [true, false, true, true, false, true, true, false, false, true])
    }
}
#endif
