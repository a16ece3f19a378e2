import Logging
import XCallbackSystem

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
    let schemes: OpenSchemePolicy
    /// Refused schemes already logged: one warning per scheme, not per record.
    private let reported = Lock(Set<String>())

    init(command: String, schemes: OpenSchemePolicy = OpenSchemePolicy(), maxConcurrent: Int = 8, logger: Logger) {
        self.command = command
        self.schemes = schemes
        self.maxConcurrent = maxConcurrent
        self.logger = logger
    }

    /// Whether `url` may be opened; logs a refused scheme once.
    func allows(_ url: String) -> Bool {
        guard let scheme = schemes.refusedScheme(of: url) else { return true }
        if reported.withLock({ $0.insert(scheme).inserted }) {
            logger.warning("--open: refused to open a '\(scheme):' callback (--open-scheme \(scheme) allows it); such records are written to stdout instead")
        }
        return false
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
