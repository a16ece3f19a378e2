import Foundation
import Testing

/// A worker's lane keeps each request's frame in its slot, and gives a long
/// line's room back when the slot is taken (bef6389 notes the frame's
/// capacity at `publish` instead of reading the frame on the reply thread).
/// Long lines (past the 4 KiB a slot keeps) between short ones, some of
/// them answered with an error, which makes the general path adopt the
/// request from the frame in its slot: every line still gets exactly one
/// record, at its own callback, with its own values.
@Suite("Worker lane: long and short lines through the slots", .ownThreads)
struct WorkerLaneLineTests {
    @Test("long lines between short ones, some adopted on error: one record each, its own", arguments: ["url", "jsonl"])
    func longAndShortLines(output: String) throws {
        let fixture = try HostFixture(["Calculator"], isolation: "process")
        var generator = SplitMix64(seed: 0xF4A3)
        var expected: [Int: String] = [:]
        let lines = (0..<240).map { index -> String in
            let long = index % 3 == 0
            let padding = long ? String(repeating: "p%20", count: 1_100 + Int(generator.next() % 1_500)) : "s"
            let failing = index % 5 == 0
            expected[index] = failing ? "er://r?i=\(index)&errorCode=DivisionByZero" : "ok://r?i=\(index)&result=T\(index)%3D"
            return "calc://x-callback-url/divide?lhs=\(index)&rhs=\(failing ? 0 : 2)&text=T\(index)&pad=\(padding)"
                + "&x-success=ok%3A%2F%2Fr%3Fi%3D\(index)&x-error=er%3A%2F%2Fr%3Fi%3D\(index)"
        }
        let result = try fixture.run(["--output", output], lines: lines, timeout: TestTiming.scaled(60))
        #expect(result.status == .exited(0), "stderr: \(result.stderr)")
        var seen: [Int: Int] = [:]
        for record in ChildProcess.lines(result.stdout) {
            // The callback URL: the record itself (url), or its "callback" (jsonl).
            let callback: String
            if output == "jsonl" {
                guard let object = try? JSONSerialization.jsonObject(with: Data(record.utf8)) as? [String: Any],
                      let text = object["callback"] as? String
                else {
                    Issue.record("not a record: \(record.prefix(200))")
                    continue
                }
                callback = text
                let input = object["input"] as? String ?? ""
                if let marker = text.range(of: "?i="), let index = Int(text[marker.upperBound...].prefix { $0.isNumber }) {
                    #expect(input == lines[index], "record \(index) shows another line: \(input.prefix(120))")
                }
            } else {
                callback = record
            }
            guard let marker = callback.range(of: "?i="),
                  let index = Int(callback[marker.upperBound...].prefix { $0.isNumber }),
                  let want = expected[index]
            else {
                Issue.record("unexpected record: \(record.prefix(200))")
                continue
            }
            seen[index, default: 0] += 1
            #expect(callback.hasPrefix(want), "line \(index): \(callback.prefix(200))")
        }
        #expect(seen.count == lines.count && seen.values.allSatisfy { $0 == 1 }, "records per line: \(seen.filter { $0.value != 1 })")
    }
}
