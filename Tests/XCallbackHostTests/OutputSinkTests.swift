import Logging
import Testing
@testable import XCallbackHost
@testable import XCallbackSystem
import XCallbackURL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `OutputSink` on a descriptor (stdout's kind of sink): each record is
/// written whole, in the order emitted (in input order with keep-order);
/// on a batching thread records wait for the thread's flush, or for 64 KiB;
/// a reader that left stops the writing once, quietly; a description made
/// non-blocking (EAGAIN) makes the write wait for room, never drop bytes.
/// Driven through pipes the tests own; every blocking step runs on a thread
/// of its own.
@Suite("Output sink")
struct OutputSinkTests {
    /// A pipe: the sink writes `write`, the test reads `read`.
    final class Pipe: Sendable {
        let read: Int32
        let write: Int32

        init() {
            var ends: [Int32] = [-1, -1]
            precondition(Glibc.pipe(&ends) == 0)
            read = ends[0]
            write = ends[1]
            // Not inherited by the children other tests start.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        }

        /// The bytes readable now, without waiting (the read end made non-blocking).
        func available() -> [UInt8] {
            let flags = fcntl(read, F_GETFL)
            _ = fcntl(read, F_SETFL, flags | O_NONBLOCK)
            defer { _ = fcntl(read, F_SETFL, flags) }
            return Self.readAll(read)
        }

        /// Reads until the end (or, non-blocking, until nothing is left).
        static func readAll(_ descriptor: Int32) -> [UInt8] {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = Glibc.read(descriptor, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return bytes }
                bytes += chunk[0..<count]
            }
        }

        /// Makes the pipe hold `size` bytes (as far as the system allows);
        /// what it holds now.
        func resize(_ size: Int32) -> Int32 {
            // F_SETPIPE_SZ and F_GETPIPE_SZ (Linux), which Glibc's module
            // does not export without _GNU_SOURCE.
            _ = fcntl(write, 1031, size)
            return fcntl(write, 1032)
        }

        func closeWrite() { close(write) }
        func closeRead() { close(read) }
    }

    /// Takes a receiver's records.
    final class Collector: RecordReceiver {
        let records = Lock<[OutcomeRecord]>([])
        func receive(_ record: OutcomeRecord) { records.withLock { $0.append(record) } }
    }

    /// Counts `onClosed` calls.
    final class ClosedCount: Sendable {
        let value = Lock(0)
        func callback() -> @Sendable () -> Void { { [value] in value.withLock { $0 += 1 } } }
        var count: Int { value.withLock { $0 } }
    }

    static func record(_ sequence: UInt64, _ outcome: Outcome? = nil, callback: String? = nil,
                       padding: Int = 0) -> OutcomeRecord {
        let outcome = outcome ?? Outcome(kind: .success, parameters: [
            QueryParameter("n", "\(sequence)"), QueryParameter("pad", String(repeating: "p", count: padding)),
        ])
        return OutcomeRecord(sequence: sequence, input: "t://x-callback-url/r?n=\(sequence)", outcome: outcome,
                             callback: callback)
    }

    static func encoded(_ records: [OutcomeRecord], _ format: OutputFormat) -> [UInt8] {
        var bytes: [UInt8] = []
        for record in records { format.write(record, to: &bytes) }
        return bytes
    }

    /// The host ignores SIGPIPE (`run`); a test writing to a pipe nobody
    /// reads must too, or the signal ends the test process.
    static func ignoreSIGPIPE() { signal(SIGPIPE, SIG_IGN) }

    // MARK: order

    @Test("records are written whole and in the order emitted, as the format writes them",
          arguments: OutputFormat.allCases)
    func inOrder(_ format: OutputFormat) async {
        let records = (0..<200).map { (index: Int) -> OutcomeRecord in
            let outcome: Outcome? = index % 7 == 3 ? HostError.timeout("late \(index)") : nil
            let callback: String? = index % 2 == 0 ? "cb://x-callback-url/done?from=\(index)" : nil
            return Self.record(UInt64(index), outcome, callback: callback)
        }
        let written = await awaitOwnThread { () -> (bytes: [UInt8], emitted: UInt64, counts: OutcomeCounts) in
            let pipe = Pipe()
            defer { pipe.closeRead() }
            _ = pipe.resize(1 << 20)
            let tally = OutcomeTally()
            let sink = OutputSink(descriptor: pipe.write, format: format, keepOrder: false, opener: nil, tally: tally,
                                  onClosed: {})
            for record in records { sink.emit(record) }
            sink.flush()
            pipe.closeWrite()
            return (Pipe.readAll(pipe.read), sink.emittedCount, tally.snapshot)
        }
        #expect(written?.bytes == Self.encoded(records, format))
        #expect(written?.emitted == 200)
        let errors = UInt64(records.count(where: { $0.outcome.kind == .error }))
        #expect(written?.counts == OutcomeCounts(succeeded: 200 - errors, failed: errors, timedOut: errors))
    }

    @Test("keep-order: a record waits for those before it in the input, then they all go at once, in order")
    func keepOrder() async {
        let steps: [(emit: UInt64, released: [UInt64])] = [
            (2, []), (0, [0]), (3, []), (1, [1, 2, 3]), (5, []), (4, [4, 5]), (6, [6]),
        ]
        let observed = await awaitOwnThread { () -> [(released: [UInt8], emitted: UInt64)] in
            let pipe = Pipe()
            defer { pipe.closeRead(); pipe.closeWrite() }
            let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: true, opener: nil, onClosed: {})
            return steps.map { step in
                sink.emit(Self.record(step.emit))
                return (pipe.available(), sink.emittedCount)
            }
        }
        #expect(observed?.count == steps.count)
        for (index, step) in steps.enumerated() {
            #expect(observed?[index].released == Self.encoded(step.released.map { Self.record($0) }, .url),
                    "after emitting \(step.emit)")
            // A held record counts as emitted: the input's window and a
            // stop's wait count what was handed over, not what was written.
            #expect(observed?[index].emitted == UInt64(index + 1))
        }
    }

    @Test("many threads emitting at once: each record whole, each once; with keep-order exactly in sequence",
          arguments: [false, true])
    func concurrentEmitters(_ keepOrder: Bool) async {
        let threads = 8
        let perThread = 400
        let total = threads * perThread
        let result = await awaitOwnThread { () -> [UInt8] in
            let pipe = Pipe()
            defer { pipe.closeRead() }
            let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: keepOrder, opener: nil, onClosed: {})
            let reader = Lock<[UInt8]?>(nil)
            let readDone = ConditionLock(false)
            Threads.detach {
                let bytes = Pipe.readAll(pipe.read)
                reader.withLock { $0 = bytes }
                readDone.withLock { $0 = true }
                readDone.broadcast()
            }
            let finished = ConditionLock(0)
            for thread in 0..<threads {
                Threads.detach {
                    // Thread t emits sequences t, t + threads, …: interleaved
                    // with every other thread's.
                    for index in 0..<perThread {
                        sink.emit(Self.record(UInt64(index * threads + thread), padding: (index * 37) % 300))
                    }
                    finished.withLock { $0 += 1 }
                    finished.broadcast()
                }
            }
            finished.wait(until: { $0 == threads }) { _ in }
            sink.flush()
            pipe.closeWrite()
            readDone.wait(until: { $0 }) { _ in }
            return reader.withLock { $0 } ?? []
        }
        guard let result else {
            Issue.record("the emitters or the reader never finished")
            return
        }
        let lines = result.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == total)
        let expected = (0..<total).map { sequence in
            Self.encoded([Self.record(UInt64(sequence), padding: ((sequence / threads) * 37) % 300)], .url).dropLast()
        }
        let got = lines.map { Array($0) }
        let wanted = expected.map { Array($0) }
        if keepOrder {
            #expect(got == wanted)
        } else {
            #expect(Set(got) == Set(wanted))
            #expect(got.count == Set(got).count, "a record written twice")
        }
    }

    // MARK: batching

    @Test("on a batching thread records wait for its flush, or go mid-burst once 64 KiB are buffered")
    func batching() async {
        struct Observed: Sendable {
            var capacity: Int32 = 0
            var beforeFlush = 0, afterFlush = 0
            var midBurst: [Int] = []
            var heldAfterBatch = 0, afterLastFlush = 0
        }
        let record = Self.record(1, padding: 1000)
        let size = Self.encoded([record], .url).count
        // Records until the buffer reaches the threshold, counted with the
        // one that crosses it.
        let crossing = (BufferedWriter.threshold + size - 1) / size
        let observed = await awaitOwnThread { () -> Observed in
            var observed = Observed()
            let pipe = Pipe()
            defer { pipe.closeRead(); pipe.closeWrite() }
            // Nothing reads while the burst is written: the pipe must hold it.
            observed.capacity = pipe.resize(1 << 20)
            guard observed.capacity >= 2 * BufferedWriter.threshold else { return observed }
            let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: false, opener: nil, onClosed: {})
            BatchingThread.markCurrent()
            for _ in 0..<10 { sink.emit(record) }
            observed.beforeFlush = pipe.available().count
            BatchingThread.flushDeferred()
            observed.afterFlush = pipe.available().count
            // A burst: nothing until the threshold, then all of it at once.
            for _ in 0..<crossing {
                sink.emit(record)
                observed.midBurst.append(pipe.available().count)
            }
            // The records after the batch wait again, then go at the flush.
            for _ in 0..<3 { sink.emit(record) }
            observed.heldAfterBatch = pipe.available().count
            BatchingThread.flushDeferred()
            observed.afterLastFlush = pipe.available().count
            return observed
        }
        guard let observed else {
            Issue.record("the batching thread never finished")
            return
        }
        guard observed.capacity >= 2 * BufferedWriter.threshold else {
            Issue.record("the pipe holds only \(observed.capacity) bytes; cannot see a 64 KiB batch")
            return
        }
        #expect(observed.beforeFlush == 0, "a batching thread's records wait for its flush")
        #expect(observed.afterFlush == 10 * size, "the flush writes them all")
        #expect(observed.midBurst.count == crossing)
        #expect(observed.midBurst.dropLast().allSatisfy { $0 == 0 }, "below the threshold nothing is written")
        #expect(observed.midBurst.last == crossing * size, "the record that crosses 64 KiB sends the batch")
        #expect(observed.heldAfterBatch == 0)
        #expect(observed.afterLastFlush == 3 * size)
    }

    @Test("emit(answered:) writes the caller's bytes in line with the other records and counts them")
    func answeredInPlace() async {
        let result = await awaitOwnThread { () -> ([UInt8], OutcomeCounts, UInt64) in
            let pipe = Pipe()
            defer { pipe.closeRead() }
            let tally = OutcomeTally()
            let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: false, opener: nil, tally: tally,
                                  onClosed: {})
            sink.emit(Self.record(0))
            sink.emit(answered: .success) { $0 += Array("success?fast=1\n".utf8) }
            sink.emit(answered: .cancel) { $0 += Array("cancel\n".utf8) }
            sink.emit(Self.record(3, .cancel))
            sink.flush()
            pipe.closeWrite()
            return (Pipe.readAll(pipe.read), tally.snapshot, sink.emittedCount)
        }
        let expected = Self.encoded([Self.record(0)], .url) + Array("success?fast=1\ncancel\n".utf8)
            + Self.encoded([Self.record(3, .cancel)], .url)
        #expect(result?.0 == expected)
        #expect(result?.1 == OutcomeCounts(succeeded: 2, cancelled: 2))
        #expect(result?.2 == 4)
    }

    // MARK: readers that misbehave

    @Test("a reader that is gone: onClosed runs once, later records are dropped, nothing blocks; all are counted")
    func readerGone() async {
        Self.ignoreSIGPIPE()
        let closed = ClosedCount()
        let result = await awaitOwnThread { () -> (UInt64, OutcomeCounts) in
            let pipe = Pipe()
            pipe.closeRead()
            defer { pipe.closeWrite() }
            let tally = OutcomeTally()
            let sink = OutputSink(descriptor: pipe.write, format: .jsonl, keepOrder: false, opener: nil, tally: tally,
                                  onClosed: closed.callback())
            for index in 0..<5 { sink.emit(Self.record(UInt64(index))) }
            sink.emit(answered: .success) { $0 += Array("success\n".utf8) }
            sink.flush()
            return (sink.emittedCount, tally.snapshot)
        }
        #expect(result != nil, "a write to a reader that left blocked")
        #expect(closed.count == 1)
        #expect(result?.0 == 6)
        #expect(result?.1 == OutcomeCounts(succeeded: 6))
    }

    @Test("a reader that is gone on a batching thread: found at the flush, onClosed once")
    func readerGoneWhileBatching() async {
        Self.ignoreSIGPIPE()
        let closed = ClosedCount()
        let done = await awaitOwnThread { () -> Bool in
            let pipe = Pipe()
            defer { pipe.closeWrite() }
            let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: false, opener: nil,
                                  onClosed: closed.callback())
            BatchingThread.markCurrent()
            sink.emit(Self.record(0))
            pipe.closeRead()
            sink.emit(Self.record(1))
            BatchingThread.flushDeferred()
            sink.emit(Self.record(2))
            BatchingThread.flushDeferred()
            sink.flush()
            return true
        }
        #expect(done == true)
        #expect(closed.count == 1)
    }

    @Test("a full pipe made non-blocking (EAGAIN): the write waits for room and loses nothing")
    func nonBlockingFullPipe() async {
        let closed = ClosedCount()
        let records = (0..<50).map { Self.record(UInt64($0), padding: 2000) }
        let result = await awaitOwnThread { () -> (filler: Int, received: [UInt8])? in
            let pipe = Pipe()
            defer { pipe.closeRead() }
            // Someone sharing the description made it non-blocking (a
            // terminal, a pipe handed to several programs), and filled it.
            _ = fcntl(pipe.write, F_SETFL, fcntl(pipe.write, F_GETFL) | O_NONBLOCK)
            var filler = 0
            let block = [UInt8](repeating: UInt8(ascii: "f"), count: 4096)
            while true {
                let count = Glibc.write(pipe.write, block, block.count)
                if count < 0 { break }
                filler += count
            }
            guard errno == EAGAIN else { return nil }
            let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: false, opener: nil,
                                  onClosed: closed.callback())
            let emitted = ConditionLock(false)
            Threads.detach {
                for record in records { sink.emit(record) }
                sink.flush()
                emitted.withLock { $0 = true }
                emitted.broadcast()
            }
            // The reader comes back only now; every byte must still arrive.
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let wanted = filler + Self.encoded(records, .url).count
            while received.count < wanted {
                let count = Glibc.read(pipe.read, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                received += chunk[0..<count]
            }
            emitted.wait(until: { $0 }) { _ in }
            pipe.closeWrite()
            received += Pipe.readAll(pipe.read)
            return (filler, received)
        }
        guard let outer = result, let result = outer else {
            Issue.record("could not fill the pipe, or the writes never finished")
            return
        }
        #expect(closed.count == 0, "EAGAIN is not a reader that left")
        #expect(result.received.count == result.filler + Self.encoded(records, .url).count)
        #expect(Array(result.received[result.filler...]) == Self.encoded(records, .url))
    }

    // MARK: waiting for records

    @Test("waitForEmitted: true once that many were emitted, false at its deadline, woken by the record it waits for")
    func waitForEmitted() async {
        let pipe = Pipe()
        defer { pipe.closeRead(); pipe.closeWrite() }
        _ = pipe.resize(1 << 20)
        let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: false, opener: nil, onClosed: {})
        #expect(sink.waitForEmitted(0, deadline: MonotonicClock.now))
        #expect(!sink.waitForEmitted(1, deadline: MonotonicClock.now))
        let result = await awaitOwnThread { () -> (early: Bool, waited: Bool) in
            // A deadline a few ms ahead with nothing emitted: false.
            let early = sink.waitForEmitted(1, deadline: MonotonicClock.now + 5_000_000)
            let waiterDone = ConditionLock<Bool?>(nil)
            Threads.detach {
                let waited = sink.waitForEmitted(5, deadline: MonotonicClock.now + 60_000_000_000)
                waiterDone.withLock { $0 = waited }
                waiterDone.broadcast()
            }
            for index in 0..<5 { sink.emit(Self.record(UInt64(index))) }
            return (early, waiterDone.wait(until: { $0 != nil }) { $0! })
        }
        #expect(result?.early == false)
        #expect(result?.waited == true)
        #expect(sink.waitForEmitted(5, deadline: nil))
        #expect(sink.emittedCount == 5)
    }

    // MARK: where records go instead

    @Test("a receiver's sink hands records over unencoded, in order, counted, and writes nothing")
    func receiver() {
        let collector = Collector()
        let tally = OutcomeTally()
        let sink = OutputSink(receiver: collector, format: .jsonl, tally: tally)
        let records = [Self.record(0), Self.record(1, HostError.crashed("boom")), Self.record(2, .cancel)]
        for record in records { sink.emit(record) }
        sink.flush()
        sink.waitForRoom()
        #expect(collector.records.withLock { $0 } == records)
        #expect(tally.snapshot == OutcomeCounts(succeeded: 1, failed: 1, cancelled: 1, crashed: 1))
        #expect(sink.emittedCount == 3)
    }

    @Test("with --open, a callback whose scheme is refused is written, not opened")
    func refusedCallbackIsWritten() async {
        let opener = CallbackOpener(command: "/nonexistent/opener", logger: Logger(label: "tests"))
        let records = [Self.record(0, callback: "file:///etc/passwd"), Self.record(1, callback: "javascript:alert(1)")]
        let written = await awaitOwnThread { () -> [UInt8] in
            let pipe = Pipe()
            defer { pipe.closeRead() }
            let sink = OutputSink(descriptor: pipe.write, format: .url, keepOrder: false, opener: opener, onClosed: {})
            for record in records { sink.emit(record) }
            sink.flush()
            pipe.closeWrite()
            return Pipe.readAll(pipe.read)
        }
        #expect(written == Self.encoded(records, .url))
    }
}
