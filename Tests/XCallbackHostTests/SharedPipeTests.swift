import Testing
import CHostSupport
@testable import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Under `2>&1` the records and the log share one pipe, and a log line
/// longer than `PIPE_BUF` (a plug-in's long output line, quoted) is not
/// written whole if a record batch lands in it while it waits for room.
/// The two writers take turns (`SharedPipe`): driven here with a reader
/// slow enough to keep the pipe full, every line must come out whole.
@Suite("Shared stdout and stderr pipe")
struct SharedPipeTests {
    @Test("long log lines and record batches on one full pipe: every line whole, every record once")
    func longLogLinesStayWhole() async {
        var ends: [Int32] = [-1, -1]
        // Close-on-exec from the start: a host another test spawns meanwhile must not hold it.
        #expect(xcallback_pipe_cloexec(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        let console = DiagnosticConsole(descriptor: writeEnd, sharesPipeWithRecords: true)
        let records = BufferedWriter(descriptor: writeEnd, patience: nil, wholeLines: true)
        let logLine = String(repeating: "L", count: 3 * Int(PIPE_BUF)) + "\n"
        let (logCount, recordCount) = (60, 20_000)

        let output = await awaitOwnThread(within: 120) { () -> [UInt8] in
            let done = ConditionLock(0)
            Threads.detach {
                for _ in 0..<logCount { console.write(logLine) }
                done.withLock { $0 += 1 }
                done.broadcast()
            }
            Threads.detach {
                for batch in stride(from: 0, to: recordCount, by: 250) {
                    records.append { bytes in
                        for value in batch..<batch + 250 { bytes += Array("success?result=\(value)\n".utf8) }
                    }
                    records.flush()
                }
                done.withLock { $0 += 1 }
                done.broadcast()
            }
            Threads.detach {
                done.wait(until: { $0 == 2 }, deadline: nil) { _ in }
                close(writeEnd)
            }
            // Small reads, a yield between: the pipe stays full, so long
            // writes wait for room mid-way, which is where others land.
            var collected: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 512)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, 512) }
                if count <= 0 { break }
                collected += chunk[0..<count]
                sched_yield()
            }
            return collected
        }
        guard let output else {
            Issue.record("the writers or the reader did not finish")
            return
        }
        let lines = output.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast()
        var seen = [Int](repeating: 0, count: recordCount)
        var logs = 0
        var mangled: [String] = []
        let expectedLog = Array(logLine.utf8.dropLast())
        for line in lines {
            if Array(line) == expectedLog {
                logs += 1
            } else if let text = String(validating: line, as: UTF8.self), text.hasPrefix("success?result="),
                      let value = Int(text.dropFirst("success?result=".count)), value >= 0, value < recordCount {
                seen[value] += 1
            } else {
                mangled.append(String(decoding: line.prefix(80), as: UTF8.self))
            }
        }
        #expect(mangled.count == 0, "\(mangled.count) lines cut or run together: \(mangled.prefix(3))")
        #expect(logs == logCount)
        #expect(seen.allSatisfy { $0 == 1 }, "records missing or doubled")
    }
}
