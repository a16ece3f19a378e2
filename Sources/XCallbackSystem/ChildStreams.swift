#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The stdout and stderr a worker (or the zygote) starts with: pipes the
/// host relays (`WorkerOutputRelay`), or `/dev/null` when none could be
/// made. Never the host's own stdout or stderr.
public struct ChildStreams {
    public let stdout: Int32
    public let stderr: Int32
    /// Names the worker in the log; nil for `/dev/null`.
    public let channel: WorkerOutputRelay.Channel?

    public init(_ ends: WorkerOutputRelay.ChildEnds?) {
        if let ends {
            (stdout, stderr, channel) = (ends.stdout, ends.stderr, ends.channel)
        } else {
            stdout = open("/dev/null", O_WRONLY | O_CLOEXEC)
            stderr = open("/dev/null", O_WRONLY | O_CLOEXEC)
            channel = nil
        }
    }

    /// The two as placements on 1 and 2, for a child that places its own
    /// descriptors (a forked worker).
    public var placements: [ChildDescriptors.Placement] {
        [.init(descriptor: stdout, number: 1), .init(descriptor: stderr, number: 2)]
    }

    /// Closes the host's copies once the child has its own.
    public func closeInHost() {
        if stdout >= 0 { close(stdout) }
        if stderr >= 0 { close(stderr) }
    }
}
