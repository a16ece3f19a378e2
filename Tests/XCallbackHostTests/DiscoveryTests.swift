import Foundation
import Testing

@testable import XCallbackHost
@testable import XCallbackBridge

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `FileSecurity` and `PluginDiscovery`: which files a scan offers for
/// loading, in what order, and which it refuses before any code runs.
@Suite("Discovery and file security")
struct DiscoveryTests {
    /// An empty placeholder "plug-in": scanning never opens the file.
    @discardableResult
    private func touch(_ directory: TemporaryDirectory, _ name: String, mode: mode_t = 0o755) throws -> String {
        try directory.write(name, "", mode: mode)
    }

    private func scan(_ directories: [String], allowInsecure: Bool = false) -> PluginDiscovery.Scan {
        PluginDiscovery(directories: directories, security: FileSecurity(allowInsecure: allowInsecure)).scan()
    }

    // MARK: order and selection

    @Test func onlySOFilesNotHiddenInBytewiseOrder() throws {
        let directory = try TemporaryDirectory()
        for name in ["b.so", "a.so", "B.so", "a-1.so", "é.so", "_x.so"] { try touch(directory, name) }
        for name in ["readme.txt", "x.so.tmp", ".hidden.so", "libfoo.so.1", "so", "x.SO", ".x.so.tmp", "x.so~"] {
            try touch(directory, name)
        }
        let found = scan([directory.path])
        #expect(found.candidates == ["B.so", "_x.so", "a-1.so", "a.so", "b.so", "é.so"].map(directory.file))
        #expect(found.refused.isEmpty)
        #expect(found.unreadableDirectories.isEmpty)
        // Stable: the same again.
        #expect(scan([directory.path]).candidates == found.candidates)
    }

    @Test func directoriesInTheOrderGiven() throws {
        let first = try TemporaryDirectory(), second = try TemporaryDirectory()
        try touch(first, "z.so")
        try touch(first, "a.so")
        try touch(second, "m.so")
        #expect(scan([second.path, first.path]).candidates == [second.file("m.so"), first.file("a.so"), first.file("z.so")])
        #expect(scan([first.path, second.path]).candidates == [first.file("a.so"), first.file("z.so"), second.file("m.so")])
        // A trailing slash does not double it.
        #expect(scan([first.path + "/"]).candidates == [first.file("a.so"), first.file("z.so")])
    }

    @Test func aFileReachedTwiceIsOfferedOnce() throws {
        let directory = try TemporaryDirectory()
        let target = try touch(directory, "a.so")
        symlink(target, directory.file("link.so"))
        link(target, directory.file("hard.so"))
        try touch(directory, "other.so")
        let linked = try TemporaryDirectory()
        symlink(directory.path, linked.file("alias"))

        // The symlink and the hard link sort before/after "a.so": the first name wins.
        #expect(scan([directory.path]).candidates == [directory.file("a.so"), directory.file("other.so")])
        // The same directory twice, and through a symlink to it.
        #expect(scan([directory.path, directory.path]).candidates == [directory.file("a.so"), directory.file("other.so")])
        #expect(scan([directory.path, linked.file("alias")]).candidates == [directory.file("a.so"), directory.file("other.so")])
    }

    @Test func notRegularFilesAreRefused() throws {
        let directory = try TemporaryDirectory()
        try directory.directory("sub.so")
        mkfifo(directory.file("fifo.so"), 0o644)
        symlink(directory.file("nowhere"), directory.file("dangling.so"))
        let found = scan([directory.path])
        #expect(found.candidates.isEmpty)
        let reasons = Dictionary(uniqueKeysWithValues: found.refused.map { ($0.path, $0.reason) })
        #expect(reasons[directory.file("sub.so")] == .notRegularFile)
        #expect(reasons[directory.file("fifo.so")] == .notRegularFile)
        guard case .cannotOpen = reasons[directory.file("dangling.so")] else {
            Issue.record("a dangling symlink: \(String(describing: reasons[directory.file("dangling.so")]))")
            return
        }
    }

    @Test func missingAndNonDirectoryPathsAreUnreadable() throws {
        let directory = try TemporaryDirectory()
        let file = try touch(directory, "file.so")
        let found = scan([directory.file("absent"), file])
        #expect(found.candidates.isEmpty)
        #expect(found.unreadableDirectories.count == 2)
        #expect(found.unreadableDirectories[0].hasPrefix(directory.file("absent") + ": "))
        #expect(found.unreadableDirectories[1] == "\(file): not a directory")
    }

    // MARK: permissions

    @Test(arguments: [(mode_t(0o666), "writable by others"), (mode_t(0o775), "writable by its group"),
                      (mode_t(0o602), "writable by others")])
    func insecureFileIsRefusedNamingIt(mode: mode_t, why: String) throws {
        let directory = try TemporaryDirectory()
        let path = try touch(directory, "open.so", mode: mode)
        try touch(directory, "fine.so")
        let found = scan([directory.path])
        #expect(found.candidates == [directory.file("fine.so")])
        let refusal = try #require(found.refused.first)
        #expect(found.refused.count == 1)
        #expect(refusal.path == path)
        guard case .insecure(let message) = refusal.reason else {
            Issue.record("\(refusal.reason)"); return
        }
        #expect(message.contains(why))
        #expect(message.contains("mode 0" + String(mode, radix: 8)))
        #expect(refusal.description.hasPrefix("\(path): refused: file is \(why)"))

        // The explicit opt-out accepts it.
        #expect(scan([directory.path], allowInsecure: true).candidates == [directory.file("fine.so"), path])
        #expect(FileSecurity(allowInsecure: true).check(file: path) == .success(identity(of: path)))
    }

    @Test(arguments: [mode_t(0o777), mode_t(0o770), mode_t(0o1777)])
    func insecureDirectoryIsRefusedNamingIt(mode: mode_t) throws {
        let parent = try TemporaryDirectory()
        let directory = try parent.directory("plugins", mode: mode)
        try parent.write("plugins/a.so", "", mode: 0o755)
        let found = scan([directory])
        #expect(found.candidates.isEmpty)
        let problem = try #require(found.unreadableDirectories.first)
        #expect(problem.hasPrefix("\(directory): refused: directory is writable by"))
        #expect(problem.contains("mode 0" + String(mode, radix: 8)))
        #expect(FileSecurity().check(directory: directory) == problem)

        #expect(FileSecurity(allowInsecure: true).check(directory: directory) == nil)
        #expect(scan([directory], allowInsecure: true).candidates == [directory + "/a.so"])
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func fileOrDirectoryOwnedByAnotherUserIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = try touch(directory, "theirs.so")
        #expect(chown(path, 4242, 4242) == 0)
        let found = scan([directory.path])
        #expect(found.candidates.isEmpty)
        guard case .insecure(let message) = found.refused.first?.reason else {
            Issue.record("\(found.refused)"); return
        }
        #expect(message.contains("owned by another user (uid 4242)"))

        let sub = try directory.directory("sub")
        #expect(chown(sub, 4242, 4242) == 0)
        #expect(FileSecurity().check(directory: sub)?.contains("owned by another user (uid 4242)") == true)
        #expect(FileSecurity(allowInsecure: true).check(directory: sub) == nil)
    }

    @Test func aSymlinkIsJudgedByItsTarget() throws {
        let directory = try TemporaryDirectory()
        let elsewhere = try TemporaryDirectory()
        let target = try touch(elsewhere, "target.so", mode: 0o666)
        symlink(target, directory.file("link.so"))
        let found = scan([directory.path])
        #expect(found.candidates.isEmpty)
        guard case .insecure = found.refused.first?.reason else {
            Issue.record("\(found.refused)"); return
        }
        #expect(found.refused.first?.path == directory.file("link.so"))
    }

    @Test func identityIsDeviceAndInode() throws {
        let directory = try TemporaryDirectory()
        let path = try touch(directory, "a.so")
        symlink(path, directory.file("b.so"))
        let first = try FileSecurity().check(file: path).get()
        let second = try FileSecurity().check(file: directory.file("b.so")).get()
        #expect(first == second)
        #expect(first == identity(of: path))
    }

    private func identity(of path: String) -> FileSecurity.FileIdentity {
        var info = stat()
        stat(path, &info)
        return FileSecurity.FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}
