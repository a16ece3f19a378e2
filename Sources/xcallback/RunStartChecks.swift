import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

extension RunCommand {
    /// Checked before any plug-in loads, for what would otherwise fail once
    /// per record: an `--open` COMMAND that cannot be found.
    func checkBeforeStart() throws {
        if let open, let problem = OpenCommand.problem(finding: open) {
            throw Failure.exit("--open: \(problem)")
        }
    }
}
