import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs `--open COMMAND` with a callback URL as its single argument: no
/// shell, so no URL byte is ever interpreted. At most `maxConcurrent` run at
/// once; more wait, which slows the host down instead of forking without end.
final class CallbackOpener: Sendable {
    let command: String
    let logger: Logger
    private let running = ConditionLock(0)
    let maxConcurrent: Int

    init(command: String, maxConcurrent: Int = 8, logger: Logger) {
        self.command = command
        self.maxConcurrent = maxConcurrent
        self.logger = logger
    }

    func open(_ url: String) {
        running.wait(until: { [maxConcurrent] in $0 < maxConcurrent }) { $0 += 1 }
        Threads.detach { [self] in
            defer {
                running.withLock { $0 -= 1 }
                running.broadcast()
            }
            let status = OpenCommand.run(command, url: url)
            switch status {
            case .success(0): break
            case .success(let code): logger.warning("--open: '\(command)' exited with status \(code) for \(url)")
            case .failure(let failure): logger.error("--open: cannot run '\(command)': \(failure.message)")
            }
        }
    }

    /// Waits until every launched command has ended.
    func drain() {
        running.wait(until: { $0 == 0 }) { _ in }
    }
}
