import Testing
@testable import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

@Suite struct WorkerUsageTests {
    @Test func readsCPUTimeAndResidentPagesPastACommandWithSpacesAndParentheses() throws {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 900 0 0 0 150 50 0 0 20 0 1 0 12345 10000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
        let sample = try #require(WorkerUsage.parse(Array(line.utf8), plugin: "p", ticksPerSecond: 100, pageSize: 4096))
        #expect(sample.cpuSeconds == 2.0)
        #expect(sample.residentBytes == 300 * 4096)
        #expect(WorkerUsage.parse(Array("garbage".utf8), plugin: "p", ticksPerSecond: 100, pageSize: 4096) == nil)
    }

    @Test func readsThisProcess() {
        let sample = WorkerUsage.sample(plugin: "me", pid: getpid())
        #expect((sample?.residentBytes ?? 0) > 0)
    }
}
