import Testing
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host's `--socket` and `--metrics unix:` files are restricted and
/// removed as the files the host bound, never at whatever their path names
/// later: a link swapped in for the socket, or for its folder, does not
/// have the host chmod or delete another file.
@Suite("Bound socket file")
struct BoundSocketFileTests {
    /// A listening socket bound at `path`; its descriptor.
    static func bound(at path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw ScratchRemovalTests.Failure("bind \(path): \(String(cString: strerror(errno)))") }
        return descriptor
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    @Test("restricted and removed while its path names it")
    func ordinary() throws {
        let place = try ScratchRemovalTests.Place()
        let path = place.tree + "/host.sock"
        let descriptor = try Self.bound(at: path)
        defer { close(descriptor) }
        let file = try #require(BoundSocketFile(path: path))
        #expect(file.restrict(to: 0o600))
        #expect(Self.mode(path) == 0o600)
        file.remove()
        #expect(!ScratchRemovalTests.exists(path))
    }

    @Test("a link swapped in for the socket: neither chmod nor unlink reaches what it names")
    func socketSwapped() throws {
        let place = try ScratchRemovalTests.Place()
        let path = place.tree + "/host.sock"
        let descriptor = try Self.bound(at: path)
        defer { close(descriptor) }
        let file = try #require(BoundSocketFile(path: path))
        let victim = place.outside + "/file-0"
        #expect(chmod(victim, 0o644) == 0)
        #expect(rename(path, place.tree + "/moved.sock") == 0)
        try ScratchRemovalTests.Place.link(victim, at: path)
        #expect(!file.restrict(to: 0o600))
        #expect(Self.mode(victim) == 0o644)
        file.remove()
        #expect(ScratchRemovalTests.exists(path), "the link was removed as if it were the socket")
        #expect(place.outsideCount == ScratchRemovalTests.Place.outsideFiles)
    }

    @Test("a link swapped in for the socket's folder: the held folder is the one reached")
    func folderSwapped() throws {
        let place = try ScratchRemovalTests.Place()
        let path = place.tree + "/file-1"
        let descriptor = try Self.bound(at: path)
        defer { close(descriptor) }
        let file = try #require(BoundSocketFile(path: path))
        // The folder moves away, and a link to the outside folder (which
        // holds a file-1 of its own) takes its name.
        #expect(rename(place.tree, place.base + "/moved") == 0)
        try ScratchRemovalTests.Place.link(place.outside, at: place.tree)
        #expect(file.restrict(to: 0o600))
        file.remove()
        #expect(place.outsideCount == ScratchRemovalTests.Place.outsideFiles)
        #expect(!ScratchRemovalTests.exists(place.base + "/moved/file-1"))
        unlink(place.tree)
    }
}
