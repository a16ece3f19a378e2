import Logging
import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

/// Which long-running inputs `run` serves: `--fifo`, and a socket, either
/// the one systemd passed (socket activation) or the one `--socket` names.
/// None means stdin.
enum InputSelection {
    static func inputs(fifo: String?, socket: String?, activated: InheritedSocket?, logger: Logger) -> [ServedInput] {
        var inputs: [ServedInput] = []
        if let fifo { inputs.append(.fifo(path: fifo)) }
        if let activated {
            // systemd owns the socket and its file: `--socket` then only
            // documents the path, and is never bound or removed.
            if let socket, let bound = activated.path, canonical(socket) != canonical(bound) {
                logger.warning("serving the socket systemd passed (\(bound)), not --socket \(socket)")
            }
            if activated.ignoredCount > 0 {
                logger.warning("systemd passed \(activated.ignoredCount + 1) sockets; only the first (descriptor 3) is served")
            }
            inputs.append(.inheritedSocket(activated))
        } else if let socket {
            inputs.append(.socket(path: socket))
        }
        return inputs
    }

    private static func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
