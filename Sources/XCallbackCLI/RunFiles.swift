import ArgumentParser
import Synchronization
import XCallbackHost
import XCallbackSystem

#if canImport(Glibc)
import Glibc
#endif

/// `run FILE…`: each file read to its end in turn, as jq and rg read theirs,
/// `-` being stdin.
extension RunCommand {
    /// Reads the files in order; their records go to `records` as stdin's do.
    func serve(files: [String], host: Host, records: Int32) {
        let logger = Diagnostics.logger
        var remaining = files[...]
        var current: Int32 = -1
        var progress: ProgressReporter?
        func finishCurrent() {
            progress?.stop()
            progress = nil
            if current > 0 { close(current) }  // never stdin
            current = -1
        }
        host.serve(inputsInOrder: {
            finishCurrent()
            while let file = remaining.popFirst() {
                let descriptor = file == "-" ? 0 : Glibc.open(file, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else {
                    // It could be read at start-up: gone or changed since.
                    logger.error("cannot read \(file): \(String(cString: strerror(errno)))")
                    RunStatus.inputFailed.store(true, ordering: .releasing)
                    continue
                }
                current = descriptor
                if !noProgress && ProgressReporter.isWanted(input: descriptor, diagnostics: 2) {
                    progress = ProgressReporter(console: Diagnostics.console, input: descriptor) { host.outcomes }
                    progress?.start()
                }
                return descriptor
            }
            return nil
        }, output: records)
        finishCurrent()
        if !remaining.isEmpty && !host.stoppedByClosedOutput {
            logger.warning("stopped before reading \(remaining.count) file(s): \(remaining.joined(separator: ", "))")
        }
    }
}

/// How `run` ended, beyond what it returns: `CommandRunner` turns it into
/// the exit status once the summary is written.
enum RunStatus {
    /// A FILE that could be read at start-up could not be opened at its turn.
    static let inputFailed = Atomic<Bool>(false)
}
