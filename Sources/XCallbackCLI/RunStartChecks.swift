import XCallbackHost

#if canImport(Glibc)
import Glibc
#endif

extension RunCommand {
    /// Checked before any plug-in loads, for what would otherwise fail once
    /// per record, or half-way through the input: an `--open` COMMAND that
    /// cannot be found, a FILE that cannot be read.
    func checkBeforeStart() throws {
        if let open, let problem = OpenCommand.problem(finding: open) {
            throw Failure.exit("--open: \(problem)")
        }
        for file in files where file != "-" {
            if let problem = Self.problem(reading: file) { throw Failure.exit("\(file): \(problem)") }
        }
    }

    private static func problem(reading file: String) -> String? {
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        defer { close(descriptor) }
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { return "is a directory" }
        return nil
    }
}
