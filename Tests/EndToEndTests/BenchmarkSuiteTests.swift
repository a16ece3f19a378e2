import Foundation
import Testing

/// The benchmark suite is run by hand, so nothing else notices when it
/// stops building or its C reference stops doing xcallback's job (a moved
/// header, a plug-in's new message): its `--check` mode does, without
/// timing anything, against the host these tests run.
@Suite("Benchmark suite: builds, and its C reference still gives xcallback's records", .ownThreads)
struct BenchmarkSuiteTests {
    @Test("bench.py --check", .requires(.python3), .requires(.cc), .scaledTimeLimit(minutes: 3))
    func check() throws {
        try Products.require()
        let script = TestPostgres.repository + "/Benchmarks/Suite/bench.py"
        let suite = try ChildProcess(["-B", script, "--check", Products.directory], executable: "/usr/bin/python3")
        let status = suite.waitForExit(timeout: TestTiming.scaled(150))
        #expect(status == .exited(0), "stdout: \(suite.stdout.suffix(2000)); stderr: \(suite.stderr.suffix(2000))")
        #expect(suite.stdout.contains("C reference byte-identical"), "stdout: \(suite.stdout.suffix(2000))")
    }
}
