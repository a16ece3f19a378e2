import CHostSupport
import Testing
@testable import XCallbackBridge
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `ScratchFolders` removes its folders only once every process counted as
/// a writer there has been seen to end: it waits, kills those left at the
/// deadline, and leaves the folders when one is still not seen to end.
@Suite("Scratch folder writers", .ownThreads)
struct ScratchWritersTests {
    /// Folders with one plug-in's folder made (as its worker would).
    static func folders() throws -> (ScratchFolders, root: String, folder: String) {
        let folders = ScratchFolders()
        let folder = try folders.folder(for: "/nowhere/libtest.so", named: "test")
        #expect(mkdir(folder, 0o700) == 0)
        let root = String(folder[..<folder.lastIndex(of: "/")!])
        return (folders, root, folder)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// `/bin/sleep 60`, not waited for; its pid.
    static func sleeper() throws -> pid_t {
        var pid = pid_t()
        let words: [String] = ["/bin/sleep", "60"]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        let status = posix_spawn(&pid, "/bin/sleep", nil, nil, arguments, nil)
        guard status == 0 else { throw ScratchRemovalTests.Failure("posix_spawn: \(String(cString: strerror(status)))") }
        return pid
    }

    @Test("the removal waits for a live writer and removes once it ended")
    func waitsForWriter() throws {
        let (folders, root, folder) = try Self.folders()
        let writer = try #require(folders.admitWriter())
        let result = ConditionLock<ScratchFolders.Removal?>(nil)
        Threads.detach {
            let removal = folders.removeAll(waitingUntil: MonotonicClock.now + 20_000_000_000)
            result.withLock { $0 = removal }
            result.broadcast()
        }
        // Not done while the writer lives (a bounded look, not a proof).
        let early = result.wait(until: { $0 != nil }, deadline: MonotonicClock.now + 300_000_000) { $0 }
        #expect(early == nil)
        #expect(Self.exists(folder))
        writer.ended()
        let removal = result.wait(until: { $0 != nil }, deadline: MonotonicClock.now + 10_000_000_000) { $0 }
        #expect(removal == .removed(path: root))
        #expect(!Self.exists(root))
        // Stopped: nothing new starts, no folder is made again.
        #expect(folders.admitWriter() == nil)
        #expect(throws: PluginLoadError.self) { try folders.folder(for: "/nowhere/libother.so", named: "other") }
    }

    @Test("a writer alive at the deadline is killed; one not seen to end leaves the folder in place")
    func stragglerLeavesFolder() throws {
        let (folders, root, folder) = try Self.folders()
        let writer = try #require(folders.admitWriter())
        let pid = try Self.sleeper()
        let pidfd = xcallback_pidfd_open(pid)
        writer.started(pidfd: pidfd)
        close(pidfd)
        // Nobody reaps it here, as a worker whose reaper is stuck.
        let removal = folders.removeAll(waitingUntil: MonotonicClock.now + 100_000_000)
        #expect(removal == .left(path: root, writers: 1))
        #expect(removal.warning?.contains("left the scratch folder") == true)
        #expect(Self.exists(folder))
        var status: Int32 = 0
        #expect(waitpid(pid, &status, 0) == pid)
        #expect(status & 0x7F == SIGKILL, "the straggler was not killed: status \(status)")
        // Seen to end now: the next removal takes the folders.
        writer.ended()
        #expect(folders.removeAll() == .removed(path: root))
        #expect(!Self.exists(root))
    }

    @Test("a root renamed away and replaced by a link: the link is not followed, the held folder is emptied")
    func rootReplaced() throws {
        let place = try ScratchRemovalTests.Place()
        let (folders, root, folder) = try Self.folders()
        try ScratchRemovalTests.Place.makeFile(folder + "/left-by-plugin")
        let moved = place.base + "/moved-root"
        #expect(rename(root, moved) == 0)
        try ScratchRemovalTests.Place.link(place.outside, at: root)
        defer { unlink(root) }
        let removal = folders.removeAll()
        guard case .incomplete(let path, let reason) = removal else {
            Issue.record("expected an incomplete removal, got \(removal)")
            return
        }
        #expect(path == root)
        #expect(reason.contains("no longer names"), "\(reason)")
        #expect(place.outsideCount == ScratchRemovalTests.Place.outsideFiles)
        #expect(ScratchRemovalTests.Place.entries(of: moved) == 0)
    }
}
