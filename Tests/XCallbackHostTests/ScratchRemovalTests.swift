import CHostSupport
import Testing
@testable import XCallbackBridge
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Removing a scratch folder a plug-in wrote (`xcallback_remove_tree_at`):
/// links are unlinked, never followed, even one swapped in for a folder
/// while the removal walks it; mounts are left; a tree too deep is left.
/// Before, `nftw` + `remove(path)` deleted 51 to 166 of 400 files of a
/// folder a racing plug-in's link named.
@Suite("Scratch folder removal", .ownThreads)
struct ScratchRemovalTests {
    /// A temporary folder with `tree` (what is removed) and `outside`
    /// (400 files that must all stay) in it.
    final class Place {
        let base: String
        var tree: String { base + "/tree" }
        var outside: String { base + "/outside" }
        static let outsideFiles = 400

        init() throws {
            var template = Array("/tmp/xcb-scratch-test-XXXXXX".utf8CString)
            guard mkdtemp(&template) != nil else { throw Failure("mkdtemp: \(String(cString: strerror(errno)))") }
            base = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            try Self.makeFolder(tree)
            try Self.makeFolder(outside)
            for index in 0..<Self.outsideFiles { try Self.makeFile(outside + "/file-\(index)") }
        }

        deinit { _ = xcallback_remove_tree(base) }

        var outsideCount: Int { Self.entries(of: outside) }

        static func entries(of path: String) -> Int {
            guard let stream = opendir(path) else { return -1 }
            defer { closedir(stream) }
            var count = 0
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { count += 1 }
            }
            return count
        }

        static func makeFolder(_ path: String) throws {
            guard mkdir(path, 0o700) == 0 else { throw Failure("mkdir \(path): \(String(cString: strerror(errno)))") }
        }

        static func makeFile(_ path: String) throws {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw Failure("create \(path): \(String(cString: strerror(errno)))") }
            _ = "x".withCString { write(descriptor, $0, 1) }
            close(descriptor)
        }

        static func link(_ target: String, at path: String) throws {
            guard symlink(target, path) == 0 else { throw Failure("symlink \(path): \(String(cString: strerror(errno)))") }
        }

        /// Folders `depth` deep under `path`, each with two files.
        static func nest(_ path: String, depth: Int) throws {
            var current = path
            for level in 0..<depth {
                current += "/level-\(level)"
                try makeFolder(current)
                try makeFile(current + "/a")
                try makeFile(current + "/b")
            }
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    @Test("links to an outside folder and file are unlinked, not followed; nested folders go")
    func linksAreUnlinked() throws {
        let place = try Place()
        try Place.nest(place.tree, depth: 12)
        try Place.link(place.outside, at: place.tree + "/to-outside")
        try Place.link(place.outside + "/file-0", at: place.tree + "/level-0/to-file")
        try Place.link(place.outside, at: place.tree + "/level-0/level-1/level-2/deep-link")
        try Place.link("/", at: place.tree + "/to-root")
        try Place.link("dangling-nowhere", at: place.tree + "/dangling")
        // A hard link to an outside file: the tree's name goes, the file stays.
        #expect(link(place.outside + "/file-1", place.tree + "/hard") == 0)
        // A folder its plug-in made unreadable still goes.
        try Place.makeFolder(place.tree + "/locked")
        try Place.makeFile(place.tree + "/locked/inside")
        #expect(chmod(place.tree + "/locked", 0) == 0)

        #expect(xcallback_remove_tree(place.tree) == 0, "\(String(cString: strerror(errno)))")
        #expect(!Self.exists(place.tree))
        #expect(place.outsideCount == Place.outsideFiles)
        #expect(Self.exists(place.outside + "/file-1"))
    }

    @Test("a root that is itself a link is refused, and what it names is untouched")
    func rootLinkRefused() throws {
        let place = try Place()
        try Place.link(place.outside, at: place.base + "/root-link")
        let result = xcallback_remove_tree(place.base + "/root-link")
        let error = errno
        #expect(result == -1)
        #expect(error == ELOOP || error == ENOTDIR, "\(error)")
        #expect(place.outsideCount == Place.outsideFiles)
    }

    /// A thread swaps a folder (nested, with files) and a link to the
    /// outside folder with RENAME_EXCHANGE as fast as it can, while the
    /// removal walks the tree: whichever it meets, it never deletes a file
    /// of the outside folder.
    /// Enough: the nftw walk this replaced lost files within 3 rounds.
    static let swapRounds = 60

    @Test("a link swapped in for a folder mid-walk is never followed (60 rounds)")
    func swapMidWalk() throws {
        let place = try Place()
        var leftovers = 0
        let swaps = Lock(0)
        for round in 0..<Self.swapRounds {
            let tree = place.tree
            if !Self.exists(tree) { try Place.makeFolder(tree) }
            try Place.makeFolder(tree + "/dir")
            try Place.nest(tree + "/dir", depth: 4)
            for index in 0..<20 { try Place.makeFile(tree + "/dir/file-\(index)") }
            try Place.link(place.outside, at: tree + "/swap")
            // true: swap on; false: stop; nil: stopped.
            let running = ConditionLock<Bool?>(true)
            Threads.detach {
                while running.withLock({ $0 == true }) {
                    var done = 0
                    for _ in 0..<64 where Self.renameat2(AT_FDCWD, tree + "/dir", AT_FDCWD, tree + "/swap", Self.renameExchange) == 0 {
                        done += 1
                    }
                    swaps.withLock { $0 += done }
                }
                running.withLock { $0 = nil }
                running.broadcast()
            }
            let removed = xcallback_remove_tree(tree)
            running.withLock { $0 = false }
            running.wait(until: { $0 == nil }) { _ in }
            #expect(place.outsideCount == Place.outsideFiles, "round \(round): the outside folder lost files")
            // Entries it raced past may be left; the writer gone, one more
            // removal takes the rest.
            if removed != 0 {
                leftovers += 1
                #expect(xcallback_remove_tree(tree) == 0, "round \(round): \(String(cString: strerror(errno)))")
            }
            #expect(!Self.exists(tree))
        }
        #expect(place.outsideCount == Place.outsideFiles)
        // The race ran: links and folders did trade places under the walk.
        #expect(swaps.withLock { $0 } > 0)
        print("swaps: \(swaps.withLock { $0 }); rounds whose first removal left something: \(leftovers) of \(Self.swapRounds)")
    }

    @Test("folders deeper than the walk's bound are left, and said so")
    func depthBound() throws {
        let place = try Place()
        try Place.nest(place.tree, depth: 70)
        let result = xcallback_remove_tree(place.tree)
        let error = errno
        #expect(result == -1)
        #expect(error == ENAMETOOLONG, "\(error)")
        #expect(Self.exists(place.tree + "/level-0/level-1"))
        #expect(place.outsideCount == Place.outsideFiles)
    }

    /// Needs the right to mount (root here; skipped where refused): a
    /// tmpfs, and a bind mount of the outside folder (same file system, so
    /// only the mount id tells it apart), inside the tree are left alone.
    @Test("a mount point inside the tree is left alone", .enabled(if: ScratchRemovalTests.canMount))
    func mountsLeft() throws {
        let place = try Place()
        try Place.makeFolder(place.tree + "/tmpfs")
        try Place.makeFolder(place.tree + "/bound")
        try Place.makeFile(place.tree + "/plain")
        guard mount("none", place.tree + "/tmpfs", "tmpfs", 0, nil) == 0 else {
            throw Failure("mount tmpfs: \(String(cString: strerror(errno)))")
        }
        defer { umount2(place.tree + "/tmpfs", Int32(MNT_DETACH)) }
        try Place.makeFile(place.tree + "/tmpfs/kept")
        guard mount(place.outside, place.tree + "/bound", nil, UInt(MS_BIND), nil) == 0 else {
            throw Failure("bind mount: \(String(cString: strerror(errno)))")
        }
        defer { umount2(place.tree + "/bound", Int32(MNT_DETACH)) }

        let result = xcallback_remove_tree(place.tree)
        let error = errno
        #expect(result == -1)
        #expect(error == EXDEV, "\(error)")
        #expect(Self.exists(place.tree + "/tmpfs/kept"))
        #expect(!Self.exists(place.tree + "/plain"))
        #expect(place.outsideCount == Place.outsideFiles)
    }

    /// glibc's renameat2, which Swift's Glibc module does not show.
    typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
    static let renameat2: RenameAt2 = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2")!, to: RenameAt2.self)
    /// RENAME_EXCHANGE (linux/fs.h): the two names trade places, atomically.
    static let renameExchange: UInt32 = 1 << 1

    static let canMount: Bool = {
        guard geteuid() == 0 else { return false }
        var template = Array("/tmp/xcb-mount-probe-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { return false }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { rmdir(path) }
        guard mount("none", path, "tmpfs", 0, nil) == 0 else { return false }
        umount2(path, Int32(MNT_DETACH))
        return true
    }()
}
