#if canImport(Glibc)
import Glibc
#endif

/// `xcallback` and `xcallback-queue` are one command line in two binaries:
/// the queue's database client (SwiftNIO, BoringSSL, postgres-nio) makes a
/// binary five times larger and every start of it 2 ms slower, and
/// `xcallback` is what starts for each stdin run and each worker. So
/// `xcallback` hands the queue's commands to `xcallback-queue`, found
/// beside it, and `xcallback-queue` starts its workers from `xcallback`.
package enum QueueHandover {
    static let queueBinaryName = "xcallback-queue"
    static let leanBinaryName = "xcallback"

    /// `queue …`, `enqueue …`, `outcomes …`, or `run` with `--queue`.
    package static func isQueueCommand(_ arguments: [String]) -> Bool {
        switch arguments.first {
        case "queue"?, "enqueue"?, "outcomes"?: return true
        case "run"?: return arguments.dropFirst().contains { $0 == "--queue" || $0.hasPrefix("--queue=") }
        default: return false
        }
    }

    /// The folder of the running executable, with its trailing slash.
    private static var folder: String {
        let executable = Environment.executable
        guard let slash = executable.lastIndex(of: "/") else { return "./" }
        return String(executable[...slash])
    }

    /// Replaces this process with `xcallback-queue` and the same arguments;
    /// exits 1 with what to do when it is not there.
    package static func execQueueBinary() -> Never {
        let path = folder + queueBinaryName
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + CommandLine.arguments.dropFirst()).map { strdup($0) }
        argv.append(nil)
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        let line = Array("xcallback: the queue's commands are run by \(path), which cannot be started (\(reason)); install it beside xcallback\n".utf8)
        _ = write(2, line, line.count)
        exit(1)
    }

    /// `xcallback` beside this executable, if it is there: `xcallback-queue`
    /// starts its workers and probes from it (its `CLIEdition`).
    package static var leanExecutable: String? {
        let lean = folder + leanBinaryName
        return access(lean, X_OK) == 0 ? lean : nil
    }
}
