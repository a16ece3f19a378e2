#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// stdout and stderr when they are one pipe (`2>&1`). A pipe keeps a write
/// whole only up to `PIPE_BUF` bytes: a longer one that waits for room can
/// have another write land in its middle. Records are written in pieces no
/// longer than that, but a log line may be longer (a plug-in's output line,
/// quoted in full), and a record batch landing inside it is a record cut
/// in two. So on such a pipe the host's record writes and log writes take
/// turns.
public enum SharedPipe {
    /// Held around each write to the pipe stdout and stderr share.
    public static let turns = Lock(())

    /// Whether `descriptor` and `other` are the same pipe.
    public static func isSame(_ descriptor: Int32, as other: Int32) -> Bool {
        var mine = stat(), theirs = stat()
        guard fstat(descriptor, &mine) == 0, fstat(other, &theirs) == 0 else { return false }
        return mine.st_mode & S_IFMT == S_IFIFO && mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino
    }
}
