import Foundation
import Testing

@testable import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

/// A line handed out by `LineReader` stays intact while it is held, even as
/// the reader goes on reading: when the thread parsing a line stalls, the
/// input moves to another thread (`HandoffLoop`), and that thread's reads
/// must not move or overwrite the stalled thread's bytes. Before the
/// buffer was shared safely, a stalled line was parsed from another line's
/// bytes: a record carried another request's result, or a torn line ran.
@Suite("Line reader")
struct LineReaderTests {
    @Test("a held line keeps its bytes while the reader refills and compacts its buffer")
    func heldLineSurvivesRefills() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let first = "calc://x-callback-url/add?lhs=0&rhs=3789&text=c0-3789"
        // Far more than the buffer holds, so it is refilled and compacted
        // several times while the first line is held.
        var text = first + "\n"
        for index in 0..<20_000 { text += "calc://x-callback-url/add?lhs=1&rhs=\(index)&text=other-\(index)\n" }
        let bytes = Array(text.utf8)
        let writeEnd = ends[1]
        let writer = Thread {
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = write(writeEnd, raw.baseAddress! + offset, raw.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(writeEnd)
        }
        writer.start()

        let reader = LineReader(descriptor: ends[0], wake: nil, maxLineBytes: 1024)
        guard case .text(let held, let storage) = reader.next(beforeBlocking: {}) else {
            Issue.record("no first line")
            return
        }
        var others = 0
        while let line = reader.next(beforeBlocking: {}) {
            if case .text = line { others += 1 }
        }
        #expect(others == 20_000)
        withExtendedLifetime(storage) {
            #expect(String(decoding: held, as: UTF8.self) == first)
        }
    }
}
