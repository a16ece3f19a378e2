// Pieces of the chaos test (ChaosTests.swift): a seeded plan of Faulty
// requests, paced socket clients that send them and collect the records,
// and /proc readings (peak RSS, live workers).

import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - The plan

/// One request of the chaos run. `id` makes every line unique, so each
/// record maps back to its request through the `jsonl` `input` field (the
/// Faulty plug-in ignores parameters it does not know).
struct ChaosRequest: Sendable {
    enum Kind: String, Sendable, CaseIterable {
        /// SIGSEGV in the worker.
        case crash
        /// A handler that never returns.
        case hang
        /// Completes from another thread after `sleepMilliseconds`.
        case sleep
    }

    let id: Int
    let kind: Kind
    let sleepMilliseconds: Int

    var line: String {
        switch kind {
        case .crash, .hang: "faulty://x-callback-url/\(kind.rawValue)?id=\(id)"
        case .sleep: "faulty://x-callback-url/sleep?ms=\(sleepMilliseconds)&id=\(id)"
        }
    }

    /// The `id` parameter of a request line, or nil.
    static func id(ofLine line: String) -> Int? {
        guard let range = line.range(of: "id=", options: .backwards) else { return nil }
        return Int(line[range.upperBound...].prefix(while: \.isNumber))
    }

    /// `count` requests: about `crashesPerTenThousand` / 10,000 crashes, as
    /// many hangs, and sleeps of 0...`maxSleepMilliseconds` for the rest.
    static func plan(count: Int, seed: UInt64, crashesPerTenThousand: UInt64 = 100,
                     hangsPerTenThousand: UInt64 = 100, maxSleepMilliseconds: Int = 20) -> [ChaosRequest] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { id in
            let roll = generator.next() % 10_000
            if roll < crashesPerTenThousand { return ChaosRequest(id: id, kind: .crash, sleepMilliseconds: 0) }
            if roll < crashesPerTenThousand + hangsPerTenThousand {
                return ChaosRequest(id: id, kind: .hang, sleepMilliseconds: 0)
            }
            let milliseconds = Int(generator.next() % UInt64(maxSleepMilliseconds + 1))
            return ChaosRequest(id: id, kind: .sleep, sleepMilliseconds: milliseconds)
        }
    }
}

/// A positive integer from the environment, or `fallback`.
func environmentInteger<T: FixedWidthInteger>(_ name: String, default fallback: T) throws -> T {
    guard let text = ProcessInfo.processInfo.environment[name], !text.isEmpty else { return fallback }
    guard let value = T(text), value > 0 else { throw HarnessError("\(name) must be a positive integer, got '\(text)'") }
    return value
}

// MARK: - Paced socket clients

/// One connection to a `run --socket` host: a writer thread sends its lines
/// on a fixed schedule (line `k` at `start + offsets[k]` seconds), then shuts
/// down its write side; a reader thread collects the records the host sends
/// back on the same connection until the host closes it.
final class PacedSocketClient: @unchecked Sendable {
    private let descriptor: Int32
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var received: [UInt8] = []
    private var readerDone = false
    private var writerDone = false
    private var failure: String?

    init(path: String) throws {
        guard let descriptor = connectUnixSocket(path) else { throw HarnessError("cannot connect to \(path)") }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Starts both threads. `lines[k]` goes out `offsets[k]` seconds after `start`.
    func run(lines: [String], offsets: [Double], start: Date, readDeadline: Date) {
        Thread.detachNewThread { [self] in
            for (line, offset) in zip(lines, offsets) {
                let wait = start.addingTimeInterval(offset).timeIntervalSinceNow
                // Pacing, not waiting for an event: the schedule is the point.
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
                let bytes = Array((line + "\n").utf8)
                let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent != bytes.count {
                    finish(failure: "send failed after \(line): \(String(cString: strerror(errno)))", writer: true)
                    return
                }
            }
            shutdown(descriptor, Int32(SHUT_WR))
            finish(failure: nil, writer: true)
        }
        Thread.detachNewThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let remaining = Int32(max(0, min(Double(Int32.max), readDeadline.timeIntervalSinceNow * 1000)))
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, remaining)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0 else {
                    finish(failure: "the host did not close the connection by the deadline", writer: false)
                    return
                }
                let count = read(descriptor, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                condition.lock()
                received.append(contentsOf: chunk[0..<count])
                condition.unlock()
            }
            finish(failure: nil, writer: false)
        }
    }

    private func finish(failure: String?, writer: Bool) {
        condition.lock()
        if let failure, self.failure == nil { self.failure = failure }
        if writer { writerDone = true } else { readerDone = true }
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until both threads are done (the reader gives up at its
    /// `readDeadline`); returns the record lines, or throws what went wrong.
    func waitForRecords(until deadline: Date) throws -> [String] {
        condition.lock()
        defer { condition.unlock() }
        while !(readerDone && writerDone) {
            if !condition.wait(until: deadline) { throw HarnessError("a chaos client did not finish by \(deadline)") }
        }
        if let failure { throw HarnessError(failure) }
        return ChildProcess.lines(String(decoding: received, as: UTF8.self))
    }
}

// MARK: - /proc readings

/// Peak resident set size of `pid` (VmHWM) in bytes, or nil.
func peakResidentBytes(of pid: pid_t) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
    return kilobytes * 1024
}

/// Live (not zombie) processes whose command line contains every fragment.
func liveProcesses(withCommandLineContaining fragments: [String]) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { Int32($0) }.filter { pid in
        // A zombie's cmdline is empty, so it never matches.
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
        let commandLine = String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        return fragments.allSatisfy { commandLine.contains($0) }
    }
}

/// Waits until `count` holds for the live processes matching `fragments`
/// (polls /proc: another process's exit has no event here). Returns the
/// last reading.
func waitForLiveProcesses(withCommandLineContaining fragments: [String], timeout: Double,
                          until accept: ([pid_t]) -> Bool) -> [pid_t] {
    let deadline = Date(timeIntervalSinceNow: timeout)
    var found = liveProcesses(withCommandLineContaining: fragments)
    while !accept(found) && Date() < deadline {
        usleep(50_000)
        found = liveProcesses(withCommandLineContaining: fragments)
    }
    return found
}
