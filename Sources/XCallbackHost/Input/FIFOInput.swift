#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `--fifo PATH` input: created with mode 0600 when missing; a path
/// that exists and is not a FIFO is refused.
///
/// The host also opens the FIFO for writing and keeps that end open, so the
/// reader never sees end-of-file when the last writer closes: no busy loop,
/// and the next writer is simply read. Reading ends on SIGINT/SIGTERM.
struct FIFOInput {
    let readDescriptor: Int32
    let keepAliveDescriptor: Int32

    static func open(_ path: String) throws(HostSetupError) -> FIFOInput {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFIFO else {
                throw HostSetupError("\(path) exists and is not a FIFO; refusing to use it")
            }
        } else if errno == ENOENT {
            guard mkfifo(path, 0o600) == 0 else {
                throw HostSetupError("cannot create FIFO \(path): \(String(cString: strerror(errno)))")
            }
        } else {
            throw HostSetupError("cannot use FIFO \(path): \(String(cString: strerror(errno)))")
        }
        // Non-blocking open for reading succeeds with no writer yet.
        let reader = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard reader >= 0 else {
            throw HostSetupError("cannot open FIFO \(path): \(String(cString: strerror(errno)))")
        }
        let keepAlive = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        guard keepAlive >= 0 else {
            close(reader)
            throw HostSetupError("cannot open FIFO \(path) for writing: \(String(cString: strerror(errno)))")
        }
        // Checked on the open FIFO, not the path: what is read is what was checked.
        if let problem = LocalPeer.problem(withFIFO: reader, path: path) {
            close(reader)
            close(keepAlive)
            throw HostSetupError("refusing FIFO: \(problem)")
        }
        // Reads block from here on; the stop pipe interrupts them via poll.
        _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) & ~O_NONBLOCK)
        return FIFOInput(readDescriptor: reader, keepAliveDescriptor: keepAlive)
    }

    /// Closes both ends (the host could not start); the FIFO itself stays.
    func closeDescriptors() {
        close(readDescriptor)
        close(keepAliveDescriptor)
    }
}
